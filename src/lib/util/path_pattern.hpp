#pragma once
// A path pattern: one rule for routes, `deny` and `scripts`. Its text says
// which of three forms it is:
//   /static         a prefix (starts with '/', no wildcard): the path and all
//                   below it, on segment boundaries (/static, /static/a.css,
//                   not /staticky); a prefix ending in '/' matches whatever
//                   starts with it.
//   /w/*.php        a glob (starts with '/', has a wildcard): the whole path.
//   *.less, README* a name pattern (no leading '/'): the path's last segment.
// Wildcards: `*` a run of bytes without '/', `**` any run (between two '/',
// none or any number of directories: /a/**/b.md matches /a/b.md and
// /a/x/y/b.md), `?` one byte but '/', `{a,b,}` one of the alternatives (not nested; each may hold
// wildcards; one may be empty), `\x` is x itself. Case-sensitive, as paths are.
//
// Compiled once at load into a position automaton (no epsilon moves) of at
// most 128 states, simulated over a bitset: matching is linear in the path,
// never backtracks. The literal text before the first and after the last
// wildcard is compared first and left out of the automaton, so a pattern that
// cannot match costs a compare or two; `lead**tail`, `lead*tail` and literal
// names never run it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

// Whether `prefix` names `path` or a path below it, on segment
// boundaries. Inline, and spelled with memcmp rather than starts_with(): the
// router calls it for each prefix of a site on every request (out of line it
// cost 29 instructions a request, starts_with() 3 more per prefix tried;
// callgrind).
inline bool prefix_matches(std::string_view prefix, std::string_view path) {
    if (path.size() < prefix.size() || std::memcmp(path.data(), prefix.data(), prefix.size()) != 0)
        return false;
    return prefix.size() == path.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

class PathPattern {
public:
    static constexpr std::size_t max_states = 128;

    // nullopt with a message for bad text ("unclosed '{' at 4"; positions
    // count from 1, as columns do).
    static std::optional<PathPattern> compile(std::string_view text, std::string& error);
    // The same, also giving the 0-based offset in `text` the error is at, for
    // a caller that reports file:line:col.
    static std::optional<PathPattern> compile(std::string_view text, std::string& error,
                                              std::size_t& error_offset);

    bool matches(std::string_view normalised_path) const; // prefix / glob / name, per its form

    enum class Form : std::uint8_t { prefix, glob, name };
    Form form() const { return form_; }
    std::string_view text() const { return text_; }
    // A prefix's path, escapes resolved ("/a\\*" is the prefix "/a*").
    std::string_view prefix() const { return lead_; }

    // What the automaton holds, in states (the initial one included): 1 when
    // the literal checks decide alone. For tests.
    std::size_t states() const { return follow_.size(); }

    // A set of automaton states.
    struct StateSet {
        std::uint64_t words[2] = {0, 0};
        void add(std::size_t state) { words[state / 64] |= std::uint64_t{1} << (state % 64); }
        bool empty() const { return (words[0] | words[1]) == 0; }
        StateSet& operator|=(const StateSet& other) {
            words[0] |= other.words[0];
            words[1] |= other.words[1];
            return *this;
        }
        StateSet operator&(const StateSet& other) const {
            return {{words[0] & other.words[0], words[1] & other.words[1]}};
        }
    };
    static_assert(sizeof(StateSet) * 8 == max_states);

private:
    // What lies between lead_ and tail_, by how it is matched.
    enum class Middle : std::uint8_t {
        empty,     // nothing: a literal name
        any,       // `**`
        segment,   // `*`
        dirs,      // `/**/`'s `**/`
        automaton, // anything else
    };

    bool matches_whole(std::string_view subject) const;
    bool automaton_matches(std::string_view middle) const;

    std::string text_;
    std::string lead_; // literal, escapes resolved; a prefix's whole text
    std::string tail_; // literal, after the last wildcard
    Form form_ = Form::prefix;
    Middle middle_ = Middle::empty;

    // The automaton: state 0 is the start; follow_[s] the states a byte may
    // lead to from s, of which accepts_[byte_class_[byte]] keeps those that
    // take that byte; finals_ the states a match may end in.
    std::vector<StateSet> follow_;
    std::vector<StateSet> accepts_;
    std::array<std::uint8_t, 256> byte_class_{};
    StateSet finals_;
};

} // namespace weft
