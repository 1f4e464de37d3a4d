// Response rules as build_response_rules() resolves them from a handler's
// keys and its site's (handlers/build.hpp, http/response_rules.hpp).

#include "handlers/build.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace weft;
using namespace std::chrono_literals;
using Edit = config::HeaderEdit::Op;

namespace {

struct Built {
    std::unique_ptr<const http::ResponseRules> rules;
    std::string error;
    bool ok = false;
};

Built build(const config::Site& site, const config::HandlerCommon* common, bool read = false) {
    const config::Config config;
    const handlers::BuildContext context{config, site, {}, read};
    Built built;
    built.ok = handlers::build_response_rules(common, context, built.rules, built.error);
    return built;
}

config::ErrorPage page(std::vector<int> statuses, std::string target,
                       config::ErrorPage::Kind kind = config::ErrorPage::Kind::route) {
    config::ErrorPage p;
    p.statuses = std::move(statuses);
    p.kind = kind;
    p.target = std::move(target);
    return p;
}

} // namespace

TEST_CASE("no keys make no rules: the Exchange pays one pointer test", "[rules]") {
    const config::Site site;
    const config::HandlerCommon common;
    const Built site_only = build(site, nullptr);
    CHECK(site_only.ok);
    CHECK(site_only.rules == nullptr);
    const Built handler = build(site, &common);
    CHECK(handler.ok);
    CHECK(handler.rules == nullptr);
}

TEST_CASE("a handler's headers entries override the site's for the same name", "[rules]") {
    config::Site site;
    site.headers = {{Edit::set, "X-Frame-Options", "DENY"},
                    {Edit::add, "Link", "</site.css>"},
                    {Edit::set, "X-Site", "site"},
                    {Edit::remove, "X-Powered-By", ""}};
    config::HandlerCommon common;
    common.headers = {{Edit::set, "x-frame-options", "SAMEORIGIN"},
                      {Edit::add, "Link", "</a.css>"},
                      {Edit::add, "Link", "</b.css>"}};
    const Built built = build(site, &common);
    REQUIRE(built.ok);
    REQUIRE(built.rules);
    CHECK(built.rules->lines ==
          "X-Site: site\r\nx-frame-options: SAMEORIGIN\r\nLink: </a.css>\r\nLink: </b.css>\r\n");
    CHECK(built.rules->drops ==
          std::vector<std::string>{"x-site", "x-powered-by", "x-frame-options"});
    CHECK(built.rules->cache_control_line.empty());
    CHECK(built.rules->expires == -1);

    // The site's own, for requests no handler takes.
    const Built alone = build(site, nullptr);
    REQUIRE(alone.rules);
    CHECK(alone.rules->lines == "X-Frame-Options: DENY\r\nLink: </site.css>\r\nX-Site: site\r\n");
}

TEST_CASE("cache_control and expires make one Cache-Control with max-age", "[rules]") {
    const config::Site site;
    config::HandlerCommon common;
    common.cache_control = "public";
    common.expires = std::chrono::hours(24 * 7);
    Built built = build(site, &common);
    REQUIRE(built.rules);
    CHECK(built.rules->cache_control_line == "Cache-Control: public, max-age=604800\r\n");
    CHECK(built.rules->expires == 604800);
    CHECK(built.rules->edits_head());

    common.cache_control.clear();
    common.expires = 90s;
    built = build(site, &common);
    REQUIRE(built.rules);
    CHECK(built.rules->cache_control_line == "Cache-Control: max-age=90\r\n");

    common.expires.reset();
    common.cache_control = "no-cache";
    built = build(site, &common);
    REQUIRE(built.rules);
    CHECK(built.rules->cache_control_line == "Cache-Control: no-cache\r\n");
    CHECK(built.rules->expires == -1);
}

TEST_CASE("a handler's cache_control and expires override the site's Cache-Control", "[rules]") {
    config::Site site;
    site.headers = {{Edit::set, "Cache-Control", "no-store"}, {Edit::set, "X-A", "1"}};
    config::HandlerCommon common;
    common.cache_control = "public";
    common.expires = 60s;
    const Built built = build(site, &common);
    REQUIRE(built.rules);
    CHECK(built.rules->cache_control_line == "Cache-Control: public, max-age=60\r\n");
    CHECK(built.rules->expires == 60);
    CHECK(built.rules->lines == "X-A: 1\r\n");
    // Without them, the site's entry holds.
    const Built plain = build(site, nullptr);
    REQUIRE(plain.rules);
    CHECK(plain.rules->lines == "Cache-Control: no-store\r\nX-A: 1\r\n");
}

TEST_CASE("a handler's error page for a status overrides the site's", "[rules]") {
    config::Site site;
    site.error_pages = {page({404, 410}, "/errors/site.html"), page({500}, "/errors/500.html")};
    config::HandlerCommon common;
    common.error_pages = {page({404}, "/errors/./own//404.html")};
    const Built built = build(site, &common);
    REQUIRE(built.rules);
    CHECK_FALSE(built.rules->edits_head());
    REQUIRE(built.rules->error_page(404));
    CHECK(built.rules->error_page(404)->route == "/errors/own/404.html"); // normalised
    REQUIRE(built.rules->error_page(410));
    CHECK(built.rules->error_page(410)->route == "/errors/site.html");
    REQUIRE(built.rules->error_page(500));
    CHECK(built.rules->error_page(403) == nullptr);
}

TEST_CASE("a file error page is read once when serving, not by weft -t", "[rules]") {
    TempDir dir;
    dir.write("50x.html", "<h1>down</h1>\n");
    config::Site site;
    site.error_pages = {
        page({502, 503}, (dir.path / "50x.html").string(), config::ErrorPage::Kind::file)};
    const Built checked = build(site, nullptr, false);
    REQUIRE(checked.rules);
    CHECK_FALSE(checked.rules->error_page(502)->body);
    const Built serving = build(site, nullptr, true);
    REQUIRE(serving.rules);
    const http::ErrorPageTarget* target = serving.rules->error_page(503);
    REQUIRE(target);
    CHECK(target->from_file);
    REQUIRE(target->body);
    CHECK(*target->body == "<h1>down</h1>\n");
    // Read once: every status and handler of the site shares the bytes.
    CHECK(target->body == serving.rules->error_page(502)->body);
    CHECK(target->content_type == "text/html; charset=utf-8");

    site.error_pages = {
        page({502}, (dir.path / "missing.html").string(), config::ErrorPage::Kind::file)};
    CHECK(build(site, nullptr, false).ok);
    const Built missing = build(site, nullptr, true);
    CHECK_FALSE(missing.ok);
    CHECK_THAT(missing.error,
               Catch::Contains("cannot read the error page") && Catch::Contains("missing.html"));
}

TEST_CASE("a site's file error page is shared by its handlers, not read for each", "[rules]") {
    TempDir dir;
    dir.write("50x.html", "<h1>down</h1>\n");
    config::Site site;
    site.error_pages = {
        page({502, 503}, (dir.path / "50x.html").string(), config::ErrorPage::Kind::file)};
    const config::Config config;
    const handlers::BuildContext context{config, site, {}, true};
    config::HandlerCommon a;
    config::HandlerCommon b;
    std::unique_ptr<const http::ResponseRules> rules_a;
    std::unique_ptr<const http::ResponseRules> rules_b;
    std::string error;
    REQUIRE(handlers::build_response_rules(&a, context, rules_a, error));
    REQUIRE(handlers::build_response_rules(&b, context, rules_b, error));
    REQUIRE(rules_a->error_page(502)->body);
    CHECK(rules_a->error_page(502)->body == rules_b->error_page(503)->body);
}

TEST_CASE("headers that would not fit the head's room are refused at load", "[rules]") {
    config::Site site;
    site.headers = {{Edit::set, "X-Big", std::string(http::ResponseRules::kMaxLines, 'x')}};
    const Built built = build(site, nullptr);
    CHECK_FALSE(built.ok);
    CHECK_THAT(built.error, Catch::Contains("pass 2048 bytes"));
}
