#include "util/path_pattern.hpp"

#include <bit>
#include <span>

namespace weft {

namespace {

// The pattern's text read once: escapes resolved, wildcards and the marks of a
// group as items of their own.
struct Item {
    enum class Kind : std::uint8_t {
        byte,      // `byte` itself
        one,       // ?
        star,      // *
        globstar,  // **
        dirs,      // **/ after a '/': no directory or any number of them
        group,     // {
        next,      // , inside a group
        group_end, // }
    };
    Kind kind;
    char byte;
    std::size_t offset; // in the text, for errors
};

struct Failure {
    std::string message;
    std::size_t offset;
};

std::string at(std::string message, std::size_t offset) {
    return message + " at " + std::to_string(offset + 1);
}

bool read_items(std::string_view text, bool name, std::vector<Item>& items, Failure& failure) {
    using Kind = Item::Kind;
    std::optional<std::size_t> group; // where the open '{' is
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        Kind kind = Kind::byte;
        char byte = c;
        const std::size_t offset = i;
        if (c == '\\') {
            if (i + 1 == text.size()) {
                failure = {"trailing '\\'", i};
                return false;
            }
            byte = text[++i];
        } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '*') {
            kind = Kind::globstar;
            ++i;
        } else if (c == '*') {
            kind = Kind::star;
        } else if (c == '?') {
            kind = Kind::one;
        } else if (c == '{') {
            if (group) {
                failure = {"nested '{' (the '{' at " + std::to_string(*group + 1) + " is open)", i};
                return false;
            }
            group = i;
            kind = Kind::group;
        } else if (c == ',' && group) {
            kind = Kind::next;
        } else if (c == '}' && group) {
            group.reset();
            kind = Kind::group_end;
        }
        if (kind == Kind::byte && byte == '/' && name) {
            failure = {"'/' in a name pattern (one without a leading '/' matches the last "
                       "segment only)",
                       offset};
            return false;
        }
        items.push_back({kind, byte, offset});
    }
    if (group) {
        failure = {"unclosed '{'", *group};
        return false;
    }
    // `/**/` takes any number of directories, none too: /a/**/b.md matches
    // /a/b.md, as a globstar does in shells and .gitignore (a deny rule that
    // skipped the top directory would be a hole).
    for (std::size_t i = 1; i + 1 < items.size(); ++i) {
        const auto slash = [&](std::size_t at) {
            return items[at].kind == Kind::byte && items[at].byte == '/';
        };
        if (items[i].kind == Kind::globstar && slash(i - 1) && slash(i + 1)) {
            items[i].kind = Kind::dirs;
            items.erase(items.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
    }
    return true;
}

// A piece of the pattern as the position automaton sees it: the states that
// may take its first byte and its last, and whether it may match nothing.
struct Fragment {
    PathPattern::StateSet first;
    PathPattern::StateSet last;
    bool nullable = true;
};

template <typename Visit>
void for_each_state(const PathPattern::StateSet& set, Visit visit) {
    for (std::size_t word = 0; word < 2; ++word)
        for (std::uint64_t bits = set.words[word]; bits != 0; bits &= bits - 1)
            visit(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
}

} // namespace

std::optional<PathPattern> PathPattern::compile(std::string_view text, std::string& error) {
    std::size_t offset = 0;
    return compile(text, error, offset);
}

std::optional<PathPattern> PathPattern::compile(std::string_view text, std::string& error,
                                                std::size_t& error_offset) {
    using Kind = Item::Kind;
    Failure failure;
    std::vector<Item> items;
    const bool name = !text.starts_with('/');
    if (text.empty()) {
        failure = {"empty pattern", 0};
    } else if (read_items(text, name, items, failure)) {
        failure.message.clear();
    }
    if (!failure.message.empty()) {
        error = at(failure.message, failure.offset);
        error_offset = failure.offset;
        return std::nullopt;
    }

    PathPattern pattern;
    pattern.text_ = text;
    std::size_t lead = 0;
    while (lead < items.size() && items[lead].kind == Kind::byte)
        pattern.lead_ += items[lead++].byte;
    pattern.form_ = name ? Form::name : lead == items.size() ? Form::prefix : Form::glob;
    std::size_t end = items.size();
    while (end > lead && items[end - 1].kind == Kind::byte) --end;
    for (std::size_t i = end; i < items.size(); ++i) pattern.tail_ += items[i].byte;

    const std::span<const Item> middle(items.data() + lead, end - lead);
    pattern.middle_ = middle.empty()                          ? Middle::empty
                      : middle.size() > 1                     ? Middle::automaton
                      : middle.front().kind == Kind::globstar ? Middle::any
                      : middle.front().kind == Kind::star     ? Middle::segment
                      : middle.front().kind == Kind::dirs     ? Middle::dirs
                                                              : Middle::automaton;
    pattern.follow_.resize(1);
    if (pattern.middle_ != Middle::automaton) return pattern;

    // Byte classes: 0 any byte the pattern does not name, 1 '/', then one per
    // byte it names.
    std::uint8_t classes = 2;
    pattern.byte_class_['/'] = 1;
    for (const Item& item : middle)
        if (item.kind == Kind::byte && pattern.byte_class_[std::uint8_t(item.byte)] == 0)
            pattern.byte_class_[std::uint8_t(item.byte)] = classes++;
    pattern.accepts_.resize(classes);

    // Glushkov's construction, a fragment at a time: each letter or wildcard
    // is a state; a fragment's first states follow the last states of what
    // came before it (and of what came before that, while what lay between
    // may match nothing).
    std::vector<StateSet>& follow = pattern.follow_;
    auto append = [&follow](Fragment& to, const Fragment& piece) {
        for_each_state(to.last, [&](std::size_t state) { follow[state] |= piece.first; });
        if (to.nullable) to.first |= piece.first;
        if (!piece.nullable) to.last = {};
        to.last |= piece.last;
        to.nullable = to.nullable && piece.nullable;
    };
    Fragment whole;
    whole.first.add(0);
    whole.last.add(0);
    whole.nullable = false;
    Fragment group{{}, {}, false};
    Fragment alternative;
    bool in_group = false;
    auto close_alternative = [&] {
        group.first |= alternative.first;
        group.last |= alternative.last;
        group.nullable = group.nullable || alternative.nullable;
        alternative = {};
    };
    for (const Item& item : middle) {
        switch (item.kind) {
        case Kind::group:
            in_group = true;
            group = {{}, {}, false};
            alternative = {};
            continue;
        case Kind::next:
            close_alternative();
            continue;
        case Kind::group_end:
            close_alternative();
            append(whole, group);
            in_group = false;
            continue;
        default:
            break;
        }
        const std::size_t state = follow.size();
        if (state + (item.kind == Kind::dirs) >= max_states) {
            error = at("too long: more than " + std::to_string(max_states - 1) +
                           " letters and wildcards from the first wildcard to the last",
                       item.offset);
            error_offset = item.offset;
            return std::nullopt;
        }
        follow.emplace_back();
        Fragment piece;
        piece.first.add(state);
        piece.last.add(state);
        if (item.kind == Kind::dirs) {
            // Two states: any run, then the '/' that ends it; both may be
            // skipped.
            const std::size_t slash = follow.size();
            follow.emplace_back();
            follow[state].add(state);
            follow[state].add(slash);
            pattern.accepts_[1].add(slash);
            for (std::uint8_t c = 0; c < classes; ++c) pattern.accepts_[c].add(state);
            piece.first.add(slash);
            piece.last = {};
            piece.last.add(slash);
            append(in_group ? alternative : whole, piece);
            continue;
        }
        piece.nullable = item.kind == Kind::star || item.kind == Kind::globstar;
        if (piece.nullable) follow[state].add(state);
        for (std::uint8_t c = 0; c < classes; ++c) {
            const bool takes = item.kind == Kind::byte
                                   ? pattern.byte_class_[std::uint8_t(item.byte)] == c
                               : item.kind == Kind::globstar ? true
                                                             : c != 1; // ? and * take all but '/'
            if (takes) pattern.accepts_[c].add(state);
        }
        append(in_group ? alternative : whole, piece);
    }
    pattern.finals_ = whole.last;
    return pattern;
}

bool PathPattern::matches(std::string_view path) const {
    switch (form_) {
    case Form::prefix:
        return prefix_matches(lead_, path);
    case Form::glob:
        return matches_whole(path);
    case Form::name:
        return matches_whole(path.substr(path.rfind('/') + 1));
    }
    return false;
}

bool PathPattern::matches_whole(std::string_view subject) const {
    if (subject.size() < lead_.size() + tail_.size() || !subject.starts_with(lead_) ||
        !subject.ends_with(tail_))
        return false;
    const std::string_view middle =
        subject.substr(lead_.size(), subject.size() - lead_.size() - tail_.size());
    switch (middle_) {
    case Middle::empty:
        return middle.empty();
    case Middle::any:
        return true;
    case Middle::segment:
        return middle.find('/') == std::string_view::npos;
    case Middle::dirs:
        return middle.empty() || middle.ends_with('/');
    case Middle::automaton:
        return automaton_matches(middle);
    }
    return false;
}

bool PathPattern::automaton_matches(std::string_view middle) const {
    StateSet active;
    active.add(0);
    for (const char c : middle) {
        StateSet reachable;
        for_each_state(active, [&](std::size_t state) { reachable |= follow_[state]; });
        active = reachable & accepts_[byte_class_[std::uint8_t(c)]];
        if (active.empty()) return false;
    }
    return !(active & finals_).empty();
}

} // namespace weft
