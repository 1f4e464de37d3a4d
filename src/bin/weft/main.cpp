// weft: the command line. Serving lands with the loop and HTTP layers; until
// then the binary answers --help and --version.

#include <cstdio>
#include <cstring>

namespace {

// Only what works is listed; -c, -t, --listen, --root and --php come with
// the configuration issue.
constexpr const char* kUsage = "usage: weft [--help | --version]\n"
                               "\n"
                               "  --help           print this help\n"
                               "  --version        print the version\n";

} // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-v") == 0) {
            std::printf("weft %s\n", WEFT_VERSION);
            return 0;
        }
        std::fprintf(stderr, "weft: unknown option '%s'\n%s", argv[i], kUsage);
        return 2;
    }
    std::printf(
        "weft %s: serving arrives with the HTTP layer; this build has the coroutine core only\n",
        WEFT_VERSION);
    return 0;
}
