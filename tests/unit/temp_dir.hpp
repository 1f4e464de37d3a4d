#pragma once
// A fresh directory for a test, under the system's temporary one.

#include <stdlib.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

// Removed, with everything in it, at the end.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string name = (std::filesystem::temp_directory_path() / "weft-files-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    void write(const std::string& relative, const std::string& content) const {
        std::ofstream(path / relative, std::ios::binary) << content;
    }
};
