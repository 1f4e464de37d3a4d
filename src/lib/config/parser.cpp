#include "config/parser.hpp"

#include "config/values.hpp"
#include "util/ascii.hpp"
#include "util/path_pattern.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::config {

std::string ConfigError::text() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

namespace {

// A statement and the file it came from.
struct Located {
    Statement s;
    std::shared_ptr<const std::string> file;
};

// Levenshtein distance, for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

class Parser;

std::string directory_of(const std::string& path);

// One key of a block: its name, and how it sets the target.
template <class T>
struct Key {
    const char* name;
    bool (*set)(Parser& p, T& target, const Located& at);
    bool repeatable = false;
};

class Parser {
public:
    Parser(std::vector<Located> statements, ConfigError& error)
        : statements_(std::move(statements)), error_(error) {}

    bool fail(const Located& at, int column, std::string message) {
        error_ = {*at.file, at.s.line, column, std::move(message)};
        return false;
    }
    bool fail_value(const Located& at, std::string message) {
        return fail(at, at.s.value_column, std::move(message));
    }

    std::optional<Config> parse();

    // Reads a block's statements up to its '}' (or the end, at the top):
    // keys through `keys`, sections through `section`.
    // `common` are keys of a base of T that several blocks share (every
    // handler's).
    template <class T, std::size_t N, class C = T>
    bool block(T& target, const Key<T> (&keys)[N], const char* where,
               bool (*section)(Parser&, std::type_identity_t<T>&, const Located&),
               const char* sections, std::span<const Key<C>> common = {});

    // Typed values: each parses with its values.hpp parser, whose message
    // becomes the error at the value's column.
    template <class V, class Out>
    bool typed(const Located& at, Out& out,
               std::optional<V> (*parse)(std::string_view, std::string&)) {
        std::string message;
        const std::optional<V> v = parse(at.s.value, message);
        if (!v) return fail_value(at, message);
        out = *v;
        return true;
    }
    bool duration(const Located& at, milliseconds& out) { return typed(at, out, parse_duration); }
    bool size(const Located& at, std::uint64_t& out) { return typed(at, out, parse_size); }
    bool boolean(const Located& at, bool& out) { return typed(at, out, parse_bool); }
    // A size from 1 byte to `high`, which the error says as `high_text`.
    bool size_within(const Located& at, std::uint64_t& out, std::uint64_t high,
                     const char* high_text) {
        if (!size(at, out)) return false;
        if (out >= 1 && out <= high) return true;
        return fail_value(at, std::string("expected from 1 to ") + high_text + " bytes, not '" +
                                  at.s.value + "'");
    }
    bool number(const Located& at, unsigned& out, unsigned low, unsigned high) {
        const std::string& text = at.s.value;
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size() || value < low || value > high)
            return fail_value(at, "expected a number from " + std::to_string(low) + " to " +
                                      std::to_string(high) + ", not '" + text + "'");
        out = value;
        return true;
    }
    bool text(const Located& at, std::string& out) {
        out = at.s.value;
        return true;
    }
    // A value that goes into a response head as it is: a line break would
    // end its field and start one of the value's making.
    bool field_value(const Located& at, std::string& out) {
        if (at.s.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
            return fail_value(at, "a header value holds no line break or NUL");
        out = at.s.value;
        return true;
    }
    bool words(const Located& at, std::vector<std::string>& out) {
        out.clear();
        for (std::string_view w : split_list(at.s.value)) out.emplace_back(w);
        return true;
    }
    // Names of files in a directory, tried in order (`index`): no '/'.
    bool file_names(const Located& at, std::vector<std::string>& out) {
        out.clear();
        for (std::string_view w : split_list(at.s.value)) {
            if (w.find('/') != std::string_view::npos || w == "." || w == "..")
                return fail_value(at, "expected file names, not a path: '" + std::string(w) + "'");
            out.emplace_back(w);
        }
        return true;
    }
    // A site's host names: a request's Host is matched without its port, so
    // a name with one ("example.com:8080", "[::1]:8080") would never match.
    bool host_names(const Located& at, std::vector<std::string>& out) {
        out.clear();
        for (std::string_view w : split_list(at.s.value)) {
            const std::string_view name = w.starts_with('[') ? w.substr(0, w.find(']') + 1) : w;
            if (name.size() != w.size() || name.find(':') != std::string_view::npos) {
                if (!w.starts_with('['))
                    return fail_value(at, "a host is a name without a port: '" + std::string(w) +
                                              "' (an IPv6 address goes in brackets)");
                if (!name.ends_with(']'))
                    return fail_value(at, "expected ']' closing '" + std::string(w) + "'");
                if (name.size() != w.size())
                    return fail_value(at,
                                      "a host is a name without a port: '" + std::string(w) + "'");
            }
            out.emplace_back(w);
        }
        return true;
    }
    // One path: a value with spaces would be several, which are not tried
    // in turn (only `index` lists names).
    bool one_path(const Located& at, std::string& out) {
        if (split_list(at.s.value).size() > 1)
            return fail_value(at, "expected one path, not a list: '" + at.s.value + "'");
        out = at.s.value;
        return true;
    }
    // `allow_from` / `deny_from`: addresses and blocks appended, in order,
    // to the one list both keys write (util/cidr.hpp).
    bool access(const Located& at, bool allow, AccessRules& out) {
        if (at.s.kind != Statement::Kind::assign)
            return fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
        std::string message;
        if (!out.add(allow, at.s.value, message)) return fail_value(at, message);
        return true;
    }
    // `auth_basic = REALM | off`.
    bool auth_realm(const Located& at, BasicAuth& out) {
        if (at.s.kind != Statement::Kind::assign)
            return fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
        out.off = at.s.value == "off";
        if (out.off) {
            out.realm.reset();
            return true;
        }
        std::string realm;
        if (!field_value(at, realm)) return false;
        out.realm = std::move(realm);
        return true;
    }
    // `auth_basic_user_file = PATH`: read now, so a missing file or a bad
    // line stops the load here rather than refusing every request later.
    bool auth_file(const Located& at, BasicAuth& out) {
        if (at.s.kind != Statement::Kind::assign)
            return fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
        std::string path;
        if (!one_path(at, path)) return false;
        if (path.empty()) return fail_value(at, "expected the path of an htpasswd file");
        if (!path.starts_with('/')) path = directory_of(*at.file) + "/" + path;
        std::string message;
        std::optional<Htpasswd> users = Htpasswd::load(path, message);
        if (!users) return fail_value(at, message);
        out.user_file = std::move(path);
        out.users = std::make_shared<const Htpasswd>(std::move(*users));
        return true;
    }
    // `satisfy = all | any`.
    bool satisfy(const Located& at, BasicAuth& out) {
        if (at.s.kind != Statement::Kind::assign)
            return fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
        if (at.s.value != "all" && at.s.value != "any")
            return fail_value(at, "expected all or any, not '" + at.s.value + "'");
        out.satisfy_any = at.s.value == "any";
        return true;
    }
    // Where the last auth_basic / auth_basic_user_file of the handler being
    // read, and of the site, were written: a handler's realm needs a file of
    // its own or of the site, which is only known at the site's end.
    struct AuthAt {
        const Located* realm = nullptr;
        const Located* file = nullptr;
    };
    AuthAt handler_auth_at;
    AuthAt site_auth_at;
    struct PendingAuth {
        const Located* at;
        bool needs_file; // else it needs a realm
    };
    std::vector<PendingAuth> pending_auth;

    // `limit_conn`, `limit_rate` and `limit_status`, by the key's name.
    bool limit(const Located& at, LimitSettings& out) {
        if (at.s.kind != Statement::Kind::assign)
            return fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
        const std::string& value = at.s.value;
        if (at.s.key == "limit_rate") {
            std::string message;
            std::optional<RateLimit> rate = RateLimit::parse(value, message);
            if (!rate) return fail_value(at, message);
            out.rate = *rate;
            return true;
        }
        if (at.s.key == "limit_status") {
            if (value != "429" && value != "503")
                return fail_value(at, "expected 429 or 503, not '" + value + "'");
            out.status = value == "429" ? 429 : 503;
            return true;
        }
        unsigned conn = 0;
        if (value != "off" && !number(at, conn, 1, 65535)) return false;
        out.conn = conn;
        return true;
    }
    // Path patterns (util/path_pattern.hpp): `deny`, `scripts`.
    bool patterns(const Located& at, std::vector<std::string>& out) {
        out.clear();
        for (std::string_view w : split_list(at.s.value)) {
            std::string message;
            if (!PathPattern::compile(w, message))
                return fail_value(at, "bad pattern '" + std::string(w) + "': " + message);
            if (!routable(at, w)) return false;
            out.emplace_back(w);
        }
        return true;
    }
    // A route's or a pattern's path that a request's can be: requests are
    // routed and denied by their normalised path (http/path.hpp), which
    // has no empty, "." or ".." segment, so one holding such a segment
    // would silently never match (`deny = /static//keys` denying nothing).
    bool routable(const Located& at, std::string_view path) {
        if (!path.starts_with('/')) return true;
        for (std::size_t start = 1; start < path.size();) {
            std::size_t end = path.find('/', start);
            if (end == std::string_view::npos) end = path.size();
            const std::string_view segment = path.substr(start, end - start);
            if (segment.empty() || segment == "." || segment == "..")
                return fail_value(at, "'" + std::string(path) +
                                          "' never matches: a request's path is normalised "
                                          "(no '//', '.' or '..' segment) before it is routed");
            start = end + 1;
        }
        return true;
    }
    // A directory or file on this machine, written whole (`alias`).
    bool absolute_path(const Located& at, std::string& out) {
        if (!one_path(at, out)) return false;
        if (!out.starts_with('/'))
            return fail_value(at, "expected an absolute path, not '" + out + "'");
        return true;
    }
    bool address(const Located& at, std::string_view text, std::vector<Address>& out) {
        std::string message;
        auto a = Address::parse(text, message);
        if (!a) return fail_value(at, message);
        out.push_back(*a);
        return true;
    }
    bool path_prefix(const Located& at, const std::string& prefix) {
        if (prefix.empty() || prefix[0] != '/')
            return fail_value(at,
                              "expected a path prefix starting with '/', after '" + at.s.key + "'");
        if (prefix.find_first_of(" \t") != std::string::npos)
            return fail_value(at, "expected one path prefix after '" + at.s.key + "', not '" +
                                      prefix + "'");
        return true;
    }

    const Located* next() { return i_ < statements_.size() ? &statements_[i_++] : nullptr; }
    Config& config() { return config_; }
    std::map<std::string, const Located*>& fastcgi_upstream_uses() { return upstream_uses_; }

private:
    std::vector<Located> statements_;
    std::size_t i_ = 0;
    ConfigError& error_;
    Config config_;
    std::map<std::string, const Located*> upstream_uses_;
};

template <class T, std::size_t N, class C>
bool Parser::block(T& target, const Key<T> (&keys)[N], const char* where,
                   bool (*section)(Parser&, std::type_identity_t<T>&, const Located&),
                   const char* sections, std::span<const Key<C>> common) {
    std::map<std::string, int> seen; // key -> line, for singletons
    while (const Located* at = next()) {
        const Statement& s = at->s;
        if (s.kind == Statement::Kind::close) return true;
        if (s.kind == Statement::Kind::open) {
            if (section && section(*this, target, *at)) continue;
            if (!error_.message.empty()) return false; // its own error
            return fail(*at, s.key_column,
                        "unknown section '" + s.key + "' in " + where +
                            (sections ? std::string(" (expected ") + sections + ")"
                                      : std::string(": it has no sections")));
        }
        if (!s.qualifier.empty())
            return fail(*at, s.key_column,
                        "expected 'key = value', not '" + s.qualifier + " " + s.key + " ='");
        const Key<T>* key = nullptr;
        const Key<C>* shared = nullptr;
        for (const Key<T>& k : keys)
            if (s.key == k.name) key = &k;
        for (const Key<C>& k : common)
            if (s.key == k.name) shared = &k;
        if (!key && !shared) {
            std::string message = "unknown key '" + s.key + "' in " + where;
            std::size_t best = 3;
            std::string nearest;
            const auto consider = [&](const char* name) {
                const std::size_t d = distance(s.key, name);
                if (d < best) {
                    best = d;
                    nearest = name;
                }
            };
            for (const Key<T>& k : keys) consider(k.name);
            for (const Key<C>& k : common) consider(k.name);
            if (!nearest.empty()) message += " (did you mean '" + nearest + "'?)";
            return fail(*at, s.key_column, message);
        }
        if (key ? !key->repeatable : !shared->repeatable) {
            const auto [it, fresh] = seen.emplace(s.key, s.line);
            if (!fresh)
                return fail(*at, s.key_column,
                            "'" + s.key + "' is set twice in " + where + " (first on line " +
                                std::to_string(it->second) + ")");
        }
        if (!(key ? key->set(*this, target, *at)
                  : shared->set(*this, static_cast<C&>(target), *at)))
            return false;
    }
    return true; // the end: only the top level gets here (braces match)
}

// --- the schema -----------------------------------------------------------------

// `key = value` keys answer to `=`; directive keys are written `key value`.
template <class T>
bool assignment(Parser& p, const Located& at) {
    if (at.s.kind == Statement::Kind::assign) return true;
    return p.fail(at, at.s.value_column, "expected '=' after '" + at.s.key + "'");
}

// The common key: `key = value`, parsed by one of Parser's typed readers into
// one member.
template <class T, auto Member, auto Read>
bool field(Parser& p, T& target, const Located& at) {
    return assignment<T>(p, at) && (p.*Read)(at, target.*Member);
}

const Key<Upstream> kUpstreamKeys[] = {
    {"server",
     [](Parser& p, Upstream& u, const Located& at) {
         return assignment<Upstream>(p, at) && p.address(at, at.s.value, u.servers);
     },
     true},
    {"keepalive",
     [](Parser& p, Upstream& u, const Located& at) {
         return assignment<Upstream>(p, at) && p.number(at, u.keepalive, 0, 65535);
     }},
    {"max_conns",
     [](Parser& p, Upstream& u, const Located& at) {
         return assignment<Upstream>(p, at) && p.number(at, u.max_conns, 1, 65535);
     }},
    {"connect_timeout", field<Upstream, &Upstream::connect_timeout, &Parser::duration>},
    {"read_timeout", field<Upstream, &Upstream::read_timeout, &Parser::duration>},
    {"queue_timeout", field<Upstream, &Upstream::queue_timeout, &Parser::duration>},
    {"keepalive_timeout", field<Upstream, &Upstream::keepalive_timeout, &Parser::duration>},
};

const Key<ResponseHandler> kResponseKeys[] = {
    {"status",
     [](Parser& p, ResponseHandler& h, const Located& at) {
         if (!assignment<ResponseHandler>(p, at)) return false;
         // A 1xx is interim (RFC 9110 §15.2): sent as the whole answer it
         // would leave the client waiting for a final one.
         const std::string& text = at.s.value;
         int status = 0;
         const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), status);
         if (ec != std::errc{} || end != text.data() + text.size() || status < 200 || status > 599)
             return p.fail_value(
                 at,
                 "expected a final status from 200 to 599 (1xx are interim), not '" + text + "'");
         h.status = status;
         return true;
     }},
    {"content_type", field<ResponseHandler, &ResponseHandler::content_type, &Parser::text>},
    {"body", field<ResponseHandler, &ResponseHandler::body, &Parser::text>},
};

const Key<RedirectHandler> kRedirectKeys[] = {
    {"to", field<RedirectHandler, &RedirectHandler::to, &Parser::text>},
    {"status",
     [](Parser& p, RedirectHandler& h, const Located& at) {
         if (!assignment<RedirectHandler>(p, at)) return false;
         for (int code : {301, 302, 303, 307, 308})
             if (at.s.value == std::to_string(code)) {
                 h.status = code;
                 return true;
             }
         return p.fail_value(at, "expected a redirect status (301, 302, 303, 307 or 308), not '" +
                                     at.s.value + "'");
     }},
};

const Key<FilesHandler> kFilesKeys[] = {
    {"root", field<FilesHandler, &FilesHandler::root, &Parser::text>},
    {"index", field<FilesHandler, &FilesHandler::index, &Parser::file_names>},
    {"listing", field<FilesHandler, &FilesHandler::listing, &Parser::boolean>},
    {"precompressed", field<FilesHandler, &FilesHandler::precompressed, &Parser::boolean>},
    {"alias", field<FilesHandler, &FilesHandler::alias, &Parser::absolute_path>},
    {"deny", field<FilesHandler, &FilesHandler::deny, &Parser::patterns>},
    {"follow_symlinks", field<FilesHandler, &FilesHandler::follow_symlinks, &Parser::boolean>},
};

const Key<FastcgiHandler> kFastcgiKeys[] = {
    {"upstream",
     [](Parser& p, FastcgiHandler& h, const Located& at) {
         if (!assignment<FastcgiHandler>(p, at) || !p.text(at, h.upstream)) return false;
         p.fastcgi_upstream_uses().emplace(h.upstream, &at);
         return true;
     }},
    {"pass",
     [](Parser& p, FastcgiHandler& h, const Located& at) {
         return assignment<FastcgiHandler>(p, at) && p.address(at, at.s.value, h.pass);
     }},
    {"root", field<FastcgiHandler, &FastcgiHandler::root, &Parser::text>},
    {"alias", field<FastcgiHandler, &FastcgiHandler::alias, &Parser::absolute_path>},
    {"extensions", field<FastcgiHandler, &FastcgiHandler::extensions, &Parser::words>},
    {"index", field<FastcgiHandler, &FastcgiHandler::index, &Parser::file_names>},
    {"static", field<FastcgiHandler, &FastcgiHandler::static_files, &Parser::boolean>},
    {"fallback", field<FastcgiHandler, &FastcgiHandler::fallback, &Parser::one_path>},
    {"deny", field<FastcgiHandler, &FastcgiHandler::deny, &Parser::patterns>},
    {"scripts", field<FastcgiHandler, &FastcgiHandler::scripts, &Parser::patterns>},
    {"follow_symlinks", field<FastcgiHandler, &FastcgiHandler::follow_symlinks, &Parser::boolean>},
    {"precompressed", field<FastcgiHandler, &FastcgiHandler::precompressed, &Parser::boolean>},
    {"request_buffering",
     field<FastcgiHandler, &FastcgiHandler::request_buffering, &Parser::boolean>},
    {"buffers", field<FastcgiHandler, &FastcgiHandler::buffers, &Parser::size>},
    {"max_temp_file_size",
     field<FastcgiHandler, &FastcgiHandler::max_temp_file_size, &Parser::size>},
};

// params { NAME = value ... }: any name, once each.
bool params_block(Parser& p, FastcgiHandler& h, const Located& open) {
    if (open.s.key != "params") return false;
    if (!open.s.argument.empty())
        return p.fail(open, open.s.value_column, "params takes no argument");
    std::map<std::string, int> seen;
    while (const Located* at = p.next()) {
        if (at->s.kind == Statement::Kind::close) return true;
        if (at->s.kind != Statement::Kind::assign)
            return p.fail(*at, at->s.key_column, "expected NAME = value in params");
        const auto [it, fresh] = seen.emplace(at->s.key, at->s.line);
        if (!fresh)
            return p.fail(*at, at->s.key_column,
                          "param '" + at->s.key + "' is set twice (first on line " +
                              std::to_string(it->second) + ")");
        h.params.emplace_back(at->s.key, at->s.value);
    }
    return true;
}

// --- what every handler takes ------------------------------------------------------

// `error_page = 404 410 /errors/gone.html` or `error_page = 502 503 file /srv/50x.html`.
bool error_page(Parser& p, std::vector<ErrorPage>& pages, const Located& at) {
    if (!assignment<ErrorPage>(p, at)) return false;
    const std::vector<std::string_view> words = split_list(at.s.value);
    ErrorPage page;
    std::size_t i = 0;
    for (; i < words.size() && !words[i].empty() && ascii::is_digit(words[i][0]); ++i) {
        int status = 0;
        const std::string_view w = words[i];
        const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), status);
        if (ec != std::errc{} || end != w.data() + w.size() || status < 400 || status > 599)
            return p.fail_value(at, "expected error statuses from 400 to 599, not '" +
                                        std::string(w) + "'");
        for (const ErrorPage& other : pages)
            for (int taken : other.statuses)
                if (taken == status)
                    return p.fail_value(at,
                                        "status " + std::string(w) + " has an error page already");
        page.statuses.push_back(status);
    }
    const char* form =
        "write 'error_page = STATUS... /path' or 'error_page = STATUS... file /path'";
    if (page.statuses.empty()) return p.fail_value(at, std::string("expected a status: ") + form);
    if (i < words.size() && words[i] == "file") {
        page.kind = ErrorPage::Kind::file;
        ++i;
    }
    if (i + 1 != words.size() || !words[i].starts_with('/'))
        return p.fail_value(at, std::string("expected one path after the statuses: ") + form);
    // The page is asked for without a query: one here would be taken for
    // part of the path, a page never found.
    if (page.kind == ErrorPage::Kind::route && words[i].find('?') != std::string_view::npos)
        return p.fail_value(at, "an error page's path takes no query ('?')");
    page.target = words[i];
    pages.push_back(std::move(page));
    return true;
}

// Fields the server writes itself, by the response's framing and its own
// rules, and those that say how to read the body's bytes (which no header
// edit changes: a gzip twin without its Content-Encoding is garbage): a
// `headers` section cannot set or drop them.
bool is_servers_field(std::string_view name) {
    for (std::string_view own :
         {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Trailer",
          "Date", "Server", "Content-Encoding", "Content-Range"})
        if (ascii::equals_ignoring_case(name, own)) return true;
    return false;
}

// headers { Name = value | add Name = value | remove Name ... }
bool headers_block(Parser& p, std::vector<HeaderEdit>& edits, const Located& open) {
    if (!open.s.argument.empty())
        return p.fail(open, open.s.value_column, "headers takes no argument");
    const auto check_name = [&](const Located& at, std::string_view name, int column) {
        bool token = !name.empty();
        for (char c : name) token = token && ascii::is_tchar(c);
        if (!token)
            return p.fail(at, column, "expected a header name, not '" + std::string(name) + "'");
        if (is_servers_field(name))
            return p.fail(at, column,
                          "'" + std::string(name) + "' is the server's own: it cannot be set here");
        return true;
    };
    while (const Located* at = p.next()) {
        const Statement& s = at->s;
        if (s.kind == Statement::Kind::close) return true;
        if (s.kind == Statement::Kind::directive && s.key == "remove") {
            if (split_list(s.value).empty())
                return p.fail(*at, s.value_column, "expected header names after 'remove'");
            for (std::string_view name : split_list(s.value)) {
                if (!check_name(*at, name, s.value_column)) return false;
                edits.push_back({HeaderEdit::Op::remove, std::string(name), {}});
            }
            continue;
        }
        if (s.kind != Statement::Kind::assign || (!s.qualifier.empty() && s.qualifier != "add"))
            return p.fail(*at, s.key_column,
                          "expected 'Name = value', 'add Name = value' or 'remove Name' in "
                          "headers");
        if (!check_name(*at, s.key, s.key_column)) return false;
        if (s.value.empty())
            return p.fail_value(*at, "expected a value (to drop a field: remove " + s.key + ")");
        std::string value;
        if (!p.field_value(*at, value)) return false;
        const HeaderEdit::Op op = s.qualifier.empty() ? HeaderEdit::Op::set : HeaderEdit::Op::add;
        edits.push_back({op, s.key, std::move(value)});
    }
    return true;
}

// A name set or removed twice in one section would leave the reader to
// guess which wins.
bool headers_section(Parser& p, std::vector<HeaderEdit>& edits, const Located& open) {
    const std::size_t before = edits.size();
    if (!headers_block(p, edits, open)) return false;
    for (std::size_t i = before; i < edits.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (edits[i].op != HeaderEdit::Op::add && edits[j].op != HeaderEdit::Op::add &&
                ascii::equals_ignoring_case(edits[i].name, edits[j].name))
                return p.fail(open, open.s.key_column,
                              "headers sets or removes '" + edits[i].name + "' twice");
    return true;
}

constexpr std::int64_t kMaxExpiresSeconds = std::int64_t{1} << 31;

const Key<HandlerCommon> kCommonKeys[] = {
    {"cache_control", field<HandlerCommon, &HandlerCommon::cache_control, &Parser::field_value>},
    {"expires",
     [](Parser& p, HandlerCommon& h, const Located& at) {
         milliseconds d{};
         if (!assignment<HandlerCommon>(p, at) || !p.duration(at, d)) return false;
         // Caches read a longer max-age as 2^31 s (RFC 9111 §1.2.2), and an
         // Expires past the year 9999 has no HTTP date.
         if (d > std::chrono::seconds(kMaxExpiresSeconds))
             return p.fail_value(at, "expires is at most " +
                                         std::to_string(kMaxExpiresSeconds / 86400) +
                                         "d (2^31 s, what caches take of a max-age)");
         h.expires = d;
         return true;
     }},
    {"error_page",
     [](Parser& p, HandlerCommon& h, const Located& at) {
         return error_page(p, h.error_pages, at);
     },
     true},
    {"allow_from",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.access(at, true, h.access); },
     true},
    {"deny_from",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.access(at, false, h.access); },
     true},
    {"auth_basic",
     [](Parser& p, HandlerCommon& h, const Located& at) {
         p.handler_auth_at.realm = &at;
         return p.auth_realm(at, h.auth);
     }},
    {"auth_basic_user_file",
     [](Parser& p, HandlerCommon& h, const Located& at) {
         p.handler_auth_at.file = &at;
         return p.auth_file(at, h.auth);
     }},
    {"satisfy",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.satisfy(at, h.auth); }},
    {"limit_conn",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.limit(at, h.limits); }},
    {"limit_rate",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.limit(at, h.limits); }},
    {"limit_status",
     [](Parser& p, HandlerCommon& h, const Located& at) { return p.limit(at, h.limits); }},
};

// What no handler may say, whatever its kind; or nullptr.
const char* common_needs(const HandlerCommon& h) {
    std::string lower = h.cache_control;
    for (char& c : lower) c = ascii::to_lower(c);
    if (h.expires && lower.find("max-age") != std::string::npos)
        return "sets max-age by 'cache_control' and by 'expires': one of them";
    if (!h.cache_control.empty() || h.expires)
        for (const HeaderEdit& edit : h.headers)
            if (ascii::equals_ignoring_case(edit.name, "Cache-Control"))
                return "says Cache-Control in 'headers' and by 'cache_control' or 'expires': "
                       "one of them";
    return nullptr;
}

// --- the handler kinds ------------------------------------------------------------

// A handler's own sub-sections besides `headers`: how to read one, and
// every sub-section's name for errors.
template <class H>
struct SubSections {
    bool (*read)(Parser&, H&, const Located& open);
    const char* names;
};

template <class H>
constexpr SubSections<H> kNoSubSections{nullptr, "headers"};

const SubSections<FastcgiHandler> kFastcgiSections{params_block, "headers or params"};

template <class H, const SubSections<H>& Sub>
bool handler_section(Parser& p, H& h, const Located& open) {
    if (open.s.key == "headers") return headers_section(p, h.headers, open);
    return Sub.read && Sub.read(p, h, open);
}

// Checks of a whole section, once its keys are read: what it still needs
// ("redirect /old needs 'to'"), or nullptr.
template <class H>
const char* needs_nothing(const H&) {
    return nullptr;
}

const char* redirect_needs(const RedirectHandler& h) {
    return h.to.empty() ? "needs 'to'" : nullptr;
}

// `alias` stands for the route's prefix, or names an exact route's file.
template <class H>
const char* alias_needs(const H& h) {
    if (h.alias.empty()) return nullptr;
    if (!h.root.empty()) return "has both 'root' and 'alias': one of them";
    if (h.route.kind == Route::Kind::pattern)
        return "has a pattern route: 'alias' needs a prefix or an exact route";
    return nullptr;
}

const char* files_needs(const FilesHandler& h) {
    return alias_needs(h);
}

const char* fastcgi_needs(const FastcgiHandler& h) {
    if (h.upstream.empty() == h.pass.empty()) return "needs 'upstream' or 'pass', one of them";
    if (!h.fallback.empty() && !h.scripts.empty()) {
        // As the handler takes it: `fallback = index.php` is /index.php.
        const std::string fallback = h.fallback.starts_with('/') ? h.fallback : "/" + h.fallback;
        bool allowed = false;
        for (const std::string& text : h.scripts) {
            std::string unused;
            const std::optional<PathPattern> pattern = PathPattern::compile(text, unused);
            allowed = allowed || (pattern && pattern->matches(fallback));
        }
        if (!allowed) return "has a 'fallback' that 'scripts' does not allow";
    }
    return alias_needs(h);
}

// One handler kind of a site: `name ROUTE { keys }`.
const Key<StatusHandler> kStatusKeys[] = {
    {"format",
     [](Parser& p, StatusHandler& h, const Located& at) {
         if (!assignment<StatusHandler>(p, at)) return false;
         for (const char* name : {"text", "json", "prometheus", "html"})
             if (at.s.value == name) return p.text(at, h.format);
         return p.fail_value(at,
                             "expected text, json, prometheus or html, not '" + at.s.value + "'");
     }},
};

// `publish_token`: RFC 6750's b64token, what a Bearer credential can be.
bool bearer_token(Parser& p, std::string& out, const Located& at) {
    const std::string& v = at.s.value;
    std::size_t end = v.find_last_not_of('=');
    end = end == std::string::npos ? 0 : end + 1;
    bool ok = end > 0;
    for (std::size_t i = 0; i < end; ++i)
        ok = ok && (ascii::is_alpha(v[i]) || ascii::is_digit(v[i]) ||
                    std::string_view("-._~+/").find(v[i]) != std::string_view::npos);
    if (!ok)
        return p.fail_value(at, "expected a bearer token (letters, digits and -._~+/, then any "
                                "'='), not '" +
                                    v + "'");
    out = v;
    return true;
}

const Key<PubsubHandler> kPubsubKeys[] = {
    {"publish_from",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return p.access(at, true, h.publish_from);
     },
     true},
    {"publish_token",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return assignment<PubsubHandler>(p, at) && bearer_token(p, h.publish_token, at);
     }},
    {"clients_publish", field<PubsubHandler, &PubsubHandler::clients_publish, &Parser::boolean>},
    {"history",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return assignment<PubsubHandler>(p, at) && p.number(at, h.history, 0, 10'000);
     }},
    {"max_message",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return assignment<PubsubHandler>(p, at) &&
                p.size_within(at, h.max_message, 16u << 20, "16M");
     }},
    {"max_topics",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return assignment<PubsubHandler>(p, at) && p.number(at, h.max_topics, 1, 1u << 24);
     }},
    {"ping",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         if (!assignment<PubsubHandler>(p, at) || !p.duration(at, h.ping)) return false;
         // Under a second, pings would be most of the traffic.
         if (h.ping.count() != 0 &&
             (h.ping < std::chrono::seconds(1) || h.ping > std::chrono::hours(24)))
             return p.fail_value(at,
                                 "expected 0 (off) or from 1s to 24h, not '" + at.s.value + "'");
         return true;
     }},
    {"max_queued",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         return assignment<PubsubHandler>(p, at) && p.size_within(at, h.max_queued, 1u << 30, "1G");
     }},
    {"subprotocols",
     [](Parser& p, PubsubHandler& h, const Located& at) {
         if (!assignment<PubsubHandler>(p, at) || !p.words(at, h.subprotocols)) return false;
         // Sec-WebSocket-Protocol's values are tokens (RFC 6455 §4.1).
         for (const std::string& name : h.subprotocols) {
             bool token = !name.empty();
             for (char c : name) token = token && ascii::is_tchar(c);
             if (!token) return p.fail_value(at, "expected token names, not '" + name + "'");
         }
         return true;
     }},
};

const char* pubsub_needs(const PubsubHandler& h) {
    if (h.route.kind != Route::Kind::prefix)
        return "needs a prefix route: its topics are the paths under it";
    // A message no queue can hold would close every subscriber.
    if (h.max_queued < h.max_message) return "has 'max_queued' under 'max_message'";
    return nullptr;
}

struct HandlerSection {
    const char* name;  // its keyword
    const char* where; // "a files handler", for errors
    bool (*read)(Parser&, Site&, const Located& open, const HandlerSection& kind);
};

const Route& route_of(const Handler& handler) {
    return std::visit([](const HandlerCommon& h) -> const Route& { return h.route; }, handler);
}

// `/prefix`, `exact /path`, or a pattern (`/w/*.php`, `*.css`).
bool read_route(Parser& p, const Located& open, Route& route) {
    std::string_view text = open.s.argument;
    if (text.starts_with("exact") && (text.size() == 5 || ascii::is_whitespace(text[5]))) {
        route.kind = Route::Kind::exact;
        text = ascii::trim_whitespace(text.substr(5));
        if (!text.starts_with('/') || text.find_first_of(" \t") != std::string_view::npos)
            return p.fail_value(open, "expected one path starting with '/' after 'exact'");
        route.path = text;
        return p.routable(open, route.path);
    }
    std::string message;
    const std::optional<PathPattern> pattern = PathPattern::compile(text, message);
    // A bare word would be a name pattern: more likely a prefix without
    // its '/' than a route for every file of that name.
    const bool wildcard = text.find_first_of("*?{") != std::string_view::npos;
    if (!text.starts_with('/') && !wildcard) return p.path_prefix(open, std::string(text));
    if (pattern && pattern->form() == PathPattern::Form::prefix) {
        // Escapes resolved: `/a\*b` is the prefix /a*b, as in `deny`.
        route.path = pattern->prefix();
        return p.path_prefix(open, route.path) && p.routable(open, route.path);
    }
    if (!pattern || text.find_first_of(" \t") != std::string_view::npos)
        return p.fail_value(
            open, "expected a path prefix, 'exact /path' or a pattern after '" + open.s.key + "'" +
                      (pattern ? std::string() : ", not '" + std::string(text) + "': " + message));
    route.kind = Route::Kind::pattern;
    route.path = text;
    return p.routable(open, route.path);
}

template <class H, const auto& Keys, const char* (*Needs)(const H&) = needs_nothing<H>,
          const SubSections<H>& Sub = kNoSubSections<H>>
bool read_handler(Parser& p, Site& site, const Located& open, const HandlerSection& kind) {
    H h;
    if (!read_route(p, open, h.route)) return false;
    p.handler_auth_at = {};
    if (!p.block(h, Keys, kind.where, handler_section<H, Sub>, Sub.names,
                 std::span<const Key<HandlerCommon>>(kCommonKeys)))
        return false;
    // Checked at the site's end, which may still set what these lack.
    if (h.auth.realm && h.auth.user_file.empty())
        p.pending_auth.push_back({p.handler_auth_at.realm, true});
    if (!h.auth.user_file.empty() && !h.auth.realm && !h.auth.off)
        p.pending_auth.push_back({p.handler_auth_at.file, false});
    const char* missing = common_needs(h);
    if (!missing) missing = Needs(h);
    if (missing)
        return p.fail(open, open.s.key_column,
                      std::string(kind.name) + " " + open.s.argument + " " + missing);
    for (const Handler& other : site.handlers) {
        const Route& taken = route_of(other);
        if (taken.kind == h.route.kind && taken.path == h.route.path)
            return p.fail(open, open.s.value_column,
                          "another handler of this site has the route '" + open.s.argument + "'");
    }
    site.handlers.emplace_back(std::move(h));
    return true;
}

template <class H, const auto& Keys, const char* (*Needs)(const H&) = needs_nothing<H>,
          const SubSections<H>& Sub = kNoSubSections<H>>
constexpr HandlerSection section(const char* name, const char* where) {
    return {name, where, read_handler<H, Keys, Needs, Sub>};
}

// Every handler kind: its keyword, its keys, what it needs, its sub-sections.
const HandlerSection kHandlerSections[] = {
    section<ResponseHandler, kResponseKeys>("response", "a response handler"),
    section<RedirectHandler, kRedirectKeys, redirect_needs>("redirect", "a redirect handler"),
    section<FilesHandler, kFilesKeys, files_needs>("files", "a files handler"),
    section<FastcgiHandler, kFastcgiKeys, fastcgi_needs, kFastcgiSections>("fastcgi",
                                                                           "a fastcgi handler"),
    section<StatusHandler, kStatusKeys>("status", "a status handler"),
    section<PubsubHandler, kPubsubKeys, pubsub_needs>("pubsub", "a pubsub handler"),
};

// "response, redirect, files, fastcgi, status or pubsub"
const std::string& handler_names() {
    static const std::string names = [] {
        std::string text;
        const std::size_t count = std::size(kHandlerSections);
        for (std::size_t i = 0; i < count; ++i) {
            if (i) text += i + 1 == count ? " or " : ", ";
            text += kHandlerSections[i].name;
        }
        return text;
    }();
    return names;
}

bool site_section(Parser& p, Site& site, const Located& open) {
    if (open.s.key == "headers") return headers_section(p, site.headers, open);
    for (const HandlerSection& kind : kHandlerSections)
        if (open.s.key == kind.name) return kind.read(p, site, open, kind);
    return false;
}

const Key<Site> kSiteKeys[] = {
    {"host", field<Site, &Site::hosts, &Parser::host_names>},
    {"root", field<Site, &Site::root, &Parser::text>},
    {"error_page",
     [](Parser& p, Site& site, const Located& at) { return error_page(p, site.error_pages, at); },
     true},
    {"allow_from",
     [](Parser& p, Site& site, const Located& at) { return p.access(at, true, site.access); },
     true},
    {"deny_from",
     [](Parser& p, Site& site, const Located& at) { return p.access(at, false, site.access); },
     true},
    {"auth_basic",
     [](Parser& p, Site& site, const Located& at) {
         p.site_auth_at.realm = &at;
         return p.auth_realm(at, site.auth);
     }},
    {"auth_basic_user_file",
     [](Parser& p, Site& site, const Located& at) {
         p.site_auth_at.file = &at;
         return p.auth_file(at, site.auth);
     }},
    {"satisfy", [](Parser& p, Site& site, const Located& at) { return p.satisfy(at, site.auth); }},
    {"limit_conn",
     [](Parser& p, Site& site, const Located& at) { return p.limit(at, site.limits); }},
    {"limit_rate",
     [](Parser& p, Site& site, const Located& at) { return p.limit(at, site.limits); }},
    {"limit_status",
     [](Parser& p, Site& site, const Located& at) { return p.limit(at, site.limits); }},
};

// A realm needs users and users a realm, each the block's own or its site's.
bool check_site_auth(Parser& p, const Site& site) {
    const Parser::AuthAt at = std::exchange(p.site_auth_at, {});
    const std::vector<Parser::PendingAuth> pending = std::exchange(p.pending_auth, {});
    if (site.auth.realm && site.auth.user_file.empty())
        return p.fail(*at.realm, at.realm->s.key_column,
                      "auth_basic needs an auth_basic_user_file in the site");
    for (const Parser::PendingAuth& handler : pending) {
        if (handler.needs_file && site.auth.user_file.empty())
            return p.fail(*handler.at, handler.at->s.key_column,
                          "auth_basic needs an auth_basic_user_file here or in the site");
        if (!handler.needs_file && !site.auth.realm)
            return p.fail(*handler.at, handler.at->s.key_column,
                          "auth_basic_user_file needs an auth_basic (the realm) here or in the "
                          "site");
    }
    return true;
}

const Key<Config> kTopKeys[] = {
    {"threads",
     [](Parser& p, Config& c, const Located& at) {
         return assignment<Config>(p, at) && p.number(at, c.threads, 0, 1024);
     }},
    {"keep_alive_timeout", field<Config, &Config::keep_alive_timeout, &Parser::duration>},
    {"request_timeout", field<Config, &Config::request_timeout, &Parser::duration>},
    {"body_timeout", field<Config, &Config::body_timeout, &Parser::duration>},
    {"send_timeout", field<Config, &Config::send_timeout, &Parser::duration>},
    {"drain_delay", field<Config, &Config::drain_delay, &Parser::duration>},
    {"shutdown_timeout", field<Config, &Config::shutdown_timeout, &Parser::duration>},
    {"max_request_body", field<Config, &Config::max_request_body, &Parser::size>},
    {"limit_table",
     [](Parser& p, Config& c, const Located& at) {
         // Entries, not bytes: `64k` is 65536 of them.
         if (!assignment<Config>(p, at) || !p.size(at, c.limit_table)) return false;
         if (c.limit_table < 1 || c.limit_table > (1u << 24))
             return p.fail_value(at, "expected from 1 to 16M entries, not '" + at.s.value + "'");
         return true;
     }},
    {"access_log", field<Config, &Config::access_log, &Parser::text>},
    {"real_ip_from",
     [](Parser& p, Config& c, const Located& at) { return p.access(at, true, c.real_ip_from); },
     true},
    {"real_ip_header",
     [](Parser& p, Config& c, const Located& at) {
         using Header = Config::RealIpHeader;
         if (!assignment<Config>(p, at)) return false;
         const std::string_view v = at.s.value;
         if (ascii::equals_ignoring_case(v, "X-Forwarded-For"))
             c.real_ip_header = Header::x_forwarded_for;
         else if (ascii::equals_ignoring_case(v, "Forwarded"))
             c.real_ip_header = Header::forwarded;
         else if (ascii::equals_ignoring_case(v, "X-Real-IP"))
             c.real_ip_header = Header::x_real_ip;
         else
             return p.fail_value(at, "expected X-Forwarded-For, Forwarded or X-Real-IP, not '" +
                                         at.s.value + "'");
         return true;
     }},
    {"error_log", field<Config, &Config::error_log, &Parser::text>},
    {"user", field<Config, &Config::user, &Parser::text>},
    {"group", field<Config, &Config::group, &Parser::text>},
    {"chroot",
     [](Parser& p, Config& c, const Located& at) {
         if (!assignment<Config>(p, at)) return false;
         if (at.s.value.empty() || at.s.value.front() != '/')
             return p.fail_value(at, "chroot takes an absolute path");
         return p.text(at, c.chroot);
     }},
    {"io_backend",
     [](Parser& p, Config& c, const Located& at) {
         if (!assignment<Config>(p, at)) return false;
         // uring where it cannot run (a build without liburing, a kernel
         // or sandbox that refuses it) runs epoll, saying why: not an error,
         // so that one file serves every machine (loop/io_backend.hpp).
         if (at.s.value == "epoll" || at.s.value == "uring") return p.text(at, c.io_backend);
         return p.fail_value(at, "expected epoll or uring, not '" + at.s.value + "'");
     }},
    {"listener",
     [](Parser& p, Config& c, const Located& at) {
         if (at.s.kind != Statement::Kind::directive)
             return p.fail(at, at.s.key_column, "write 'listener ADDRESS', without '='");
         // A word after the address, not a block: `listener` is a one-line
         // directive, and the word fits it without a second grammar.
         const std::string_view value = at.s.value;
         const std::size_t space = value.find_first_of(" \t");
         if (space == std::string_view::npos) return p.address(at, value, c.listeners);
         const std::string_view option = value.substr(value.find_first_not_of(" \t", space));
         if (option != "proxy_protocol")
             return p.fail_value(at,
                                 "expected 'proxy_protocol' after the listener's address, not '" +
                                     std::string(option) + "'");
         return p.address(at, value.substr(0, space), c.listeners) &&
                p.address(at, value.substr(0, space), c.proxy_protocol);
     },
     true},
};

bool top_section(Parser& p, Config& c, const Located& open) {
    if (open.s.key == "upstream") {
        Upstream u;
        u.name = open.s.argument;
        if (u.name.empty() || u.name.find_first_of(" \t") != std::string::npos)
            return p.fail(open, open.s.value_column, "an upstream needs one name: upstream NAME {");
        for (const Upstream& other : c.upstreams)
            if (other.name == u.name)
                return p.fail(open, open.s.value_column,
                              "upstream '" + u.name + "' is defined twice");
        if (!p.block(u, kUpstreamKeys, "an upstream", nullptr, nullptr)) return false;
        if (u.servers.empty())
            return p.fail(open, open.s.key_column, "upstream " + u.name + " needs a 'server'");
        c.upstreams.push_back(std::move(u));
        return true;
    }
    if (open.s.key == "site") {
        if (!open.s.argument.empty())
            return p.fail(open, open.s.value_column,
                          "site takes no argument: choose hosts with 'host = a.example b.example'");
        Site site;
        static const std::string sections = "headers, " + handler_names();
        if (!p.block(site, kSiteKeys, "a site", site_section, sections.c_str())) return false;
        if (!check_site_auth(p, site)) return false;
        // A site another one shadows would never see a request.
        for (const Site& earlier : c.sites) {
            if (site.hosts.empty() && earlier.hosts.empty())
                return p.fail(open, open.s.key_column,
                              "a second site without 'host': only the first one is ever used");
            for (const std::string& host : site.hosts)
                for (const std::string& taken : earlier.hosts)
                    if (ascii::equals_ignoring_case(host, taken))
                        return p.fail(open, open.s.key_column,
                                      "host '" + host + "' is named by an earlier site too");
        }
        c.sites.push_back(std::move(site));
        return true;
    }
    return false;
}

std::optional<Config> Parser::parse() {
    if (!block(config_, kTopKeys, "the top level", top_section, "upstream or site"))
        return std::nullopt;
    for (const auto& [name, at] : upstream_uses_) {
        bool known = false;
        for (const Upstream& u : config_.upstreams) known = known || u.name == name;
        if (!known) {
            fail(*at, at->s.value_column, "no upstream named '" + name + "'");
            return std::nullopt;
        }
    }
    if (config_.listeners.empty()) {
        std::string unused;
        config_.listeners.push_back(*Address::parse("127.0.0.1:8080", unused));
    }
    return std::move(config_);
}

// --- files and includes -------------------------------------------------------

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// The contents of a regular file of reasonable size; false with errno set.
// (`include /dev/zero` must be an error, not a hang.)
bool read_file(const std::string& path, std::string& out) {
    constexpr off_t kMax = 16 << 20;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return false;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL; // "Invalid argument": not a regular file
        return false;
    }
    if (st.st_size > kMax) {
        errno = EFBIG;
        return false;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    return true;
}

// Lexes `text` into `out`, following includes; `chain` holds the canonical
// paths of the files being read, to catch cycles.
bool flatten(std::string_view text, const std::string& name, const std::string& directory,
             const Environment& environment, std::vector<std::string>& chain,
             std::vector<Located>& out, ConfigError& error) {
    auto file = std::make_shared<const std::string>(name);
    std::vector<Statement> statements;
    LexError lex_error;
    if (!lex(text, environment, statements, lex_error)) {
        error = {name, lex_error.line, lex_error.column, lex_error.message};
        return false;
    }
    for (Statement& s : statements) {
        if (s.kind != Statement::Kind::directive || s.key != "include") {
            out.push_back({std::move(s), file});
            continue;
        }
        const auto fail = [&](std::string message) {
            error = {name, s.line, s.value_column, std::move(message)};
            return false;
        };
        if (s.value.empty()) return fail("include needs a file name");
        const std::string path = s.value[0] == '/' ? s.value : directory + "/" + s.value;
        std::string contents;
        if (!read_file(path, contents))
            return fail("cannot read " + path + ": " + std::strerror(errno));
        char resolved[PATH_MAX];
        const std::string canonical = realpath(path.c_str(), resolved) ? resolved : path;
        for (const std::string& open : chain)
            if (open == canonical) return fail("include cycle: " + path + " is already being read");
        chain.push_back(canonical);
        if (!flatten(contents, path, directory_of(path), environment, chain, out, error))
            return false;
        chain.pop_back();
    }
    return true;
}

} // namespace

std::optional<Config> load_text(std::string_view text, const std::string& name,
                                const Environment& environment, ConfigError& error) {
    std::vector<Located> statements;
    std::vector<std::string> chain;
    if (!flatten(text, name, ".", environment, chain, statements, error)) return std::nullopt;
    return Parser(std::move(statements), error).parse();
}

std::optional<Config> load_file(const std::string& path, const Environment& environment,
                                ConfigError& error) {
    std::string text;
    if (!read_file(path, text)) {
        error = {path, 0, 0, std::string("cannot read it: ") + std::strerror(errno)};
        return std::nullopt;
    }
    std::vector<Located> statements;
    char resolved[PATH_MAX];
    std::vector<std::string> chain{realpath(path.c_str(), resolved) ? resolved : path};
    if (!flatten(text, path, directory_of(path), environment, chain, statements, error))
        return std::nullopt;
    return Parser(std::move(statements), error).parse();
}

} // namespace weft::config
