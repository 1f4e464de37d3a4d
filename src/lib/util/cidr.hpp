#pragma once
// Client addresses and the rules that allow or deny them (`allow_from`,
// `deny_from`; nginx's allow/deny):
//   127.0.0.1   10.0.0.0/8   ::1   2001:db8::/32   all   unix:
// A block is strict: its prefix length within the family's bits, no bits set
// past the prefix (nginx masks those with a warning; weft has no warnings at
// load, and `10.1.2.3/8` is more likely a typo than a wish to allow
// 10.0.0.0/8, so it is an error naming the block it would be).
//
// An IPv4-mapped IPv6 address (::ffff:a.b.c.d), a client's or a rule's, is
// the IPv4 address: an IPv6 socket's IPv4 clients match IPv4 rules (as
// nginx's). IPv4 rules match only IPv4 clients, IPv6 rules only IPv6 ones,
// `unix:` only clients of a unix socket, `all` every client.

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

// A client's address, as rules compare it: IPv4 in the first 4 bytes, the
// rest zero. Default-initialised, only `family` is set (none): a
// Connection's, constructed for every request that starts a coroutine, is
// filled only when some rule asks; `IpAddress{}` zeroes the bytes too.
struct IpAddress {
    enum class Family : std::uint8_t { none, ipv4, ipv6, unix_socket };
    Family family = Family::none;
    std::uint8_t bytes[16];

    // The address of a socket's peer (sockaddr_in, sockaddr_in6 or a unix
    // one); none for anything else.
    static IpAddress of(const sockaddr* address);
    // A numeric IPv4 or IPv6 address (no brackets, no zone).
    static std::optional<IpAddress> parse(std::string_view text);

    friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// An address block: the address and how many of its leading bits count.
class Cidr {
public:
    // `a.b.c.d[/n]` or `ipv6[/n]` (a bare address: all its bits); nullopt
    // with a one-line reason in `error`.
    static std::optional<Cidr> parse(std::string_view text, std::string& error);

    IpAddress::Family family() const { return base_.family; }
    const IpAddress& base() const { return base_; }
    unsigned prefix() const { return prefix_; }
    bool contains(const IpAddress& address) const;

    // As parse() reads it back: the prefix is left out when it covers the
    // whole address; IPv6 in its shortest form (RFC 5952).
    std::string to_string() const;

    friend bool operator==(const Cidr&, const Cidr&) = default;

private:
    IpAddress base_{};
    std::uint8_t prefix_ = 0;
    // The prefix as masks over the address's two 64-bit halves (IPv4: the
    // first half's high 32 bits), so contains() is two ANDs and compares.
    std::uint64_t mask_[2] = {};
    std::uint64_t bits_[2] = {};
};

// One allow_from or deny_from entry.
struct AccessRule {
    enum class Scope : std::uint8_t { block, all, unix_socket };
    bool allow = false;
    Scope scope = Scope::block;
    Cidr block; // for Scope::block

    bool matches(const IpAddress& address) const {
        switch (scope) {
        case Scope::all:
            return true;
        case Scope::unix_socket:
            return address.family == IpAddress::Family::unix_socket;
        case Scope::block:
            break;
        }
        return block.contains(address);
    }
    // "allow 10.0.0.0/8", "deny all"
    std::string to_string() const;
};

// Rules in the order written: the first that matches decides; none
// matching allows (as nginx's: a list meant to close ends with `deny_from =
// all`). Matching allocates nothing.
class AccessRules {
public:
    // Appends the rules a value lists ("10.0.0.0/8 ::1 all"); false with a
    // one-line reason naming the bad entry in `error`.
    bool add(bool allow, std::string_view list, std::string& error);
    void add(AccessRule rule) { rules_.push_back(rule); }

    bool allows(const IpAddress& address) const {
        for (const AccessRule& rule : rules_)
            if (rule.matches(address)) return rule.allow;
        return true;
    }
    // Whether a rule allows `address` by name (nginx's `satisfy any`
    // lets such a client in without credentials; none matching does not).
    bool allows_explicitly(const IpAddress& address) const {
        for (const AccessRule& rule : rules_)
            if (rule.matches(address)) return rule.allow;
        return false;
    }
    bool empty() const { return rules_.empty(); }
    const std::vector<AccessRule>& rules() const { return rules_; }

private:
    std::vector<AccessRule> rules_;
};

} // namespace weft
