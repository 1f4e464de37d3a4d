#include "http/date.hpp"

#include <cstdio>
#include <cstring>

namespace weft::http {

namespace {

constexpr char kDays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr char kMonths[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void two_digits(char* out, int v) {
    out[0] = static_cast<char>('0' + v / 10);
    out[1] = static_cast<char>('0' + v % 10);
}

// Reads exactly `n` digits at text[at]; -1 if they are not digits.
int digits(std::string_view text, std::size_t at, std::size_t n) {
    if (at + n > text.size()) return -1;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (text[i] - '0');
    }
    return v;
}

int month_number(std::string_view name) {
    for (int m = 0; m < 12; ++m)
        if (name == kMonths[m]) return m;
    return -1;
}

// "HH:MM:SS" at text[at]; false if malformed.
bool clock_time(std::string_view text, std::size_t at, std::tm& tm) {
    if (at + 8 > text.size() || text[at + 2] != ':' || text[at + 5] != ':') return false;
    tm.tm_hour = digits(text, at, 2);
    tm.tm_min = digits(text, at + 3, 2);
    tm.tm_sec = digits(text, at + 6, 2);
    return tm.tm_hour >= 0 && tm.tm_hour < 24 && tm.tm_min >= 0 && tm.tm_min < 60 &&
           tm.tm_sec >= 0 && tm.tm_sec <= 60;
}

int days_in_month(int month, int year) {
    constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 1 && leap ? 29 : kDays[month];
}

// timegm() would carry "31 Feb" into March: a date that does not exist is
// refused instead.
std::optional<std::time_t> to_time(std::tm& tm) {
    if (tm.tm_mon < 0 || tm.tm_year < 0 || tm.tm_mday < 1 ||
        tm.tm_mday > days_in_month(tm.tm_mon, tm.tm_year + 1900))
        return std::nullopt;
    return timegm(&tm);
}

// RFC 9110 §5.6.7: a two-digit year read in this century that would be more
// than 50 years in the future is the most recent past year with those digits.
// A fixed pivot would drift out of that rule as the clock moves.
int rfc850_year(int two_digits) {
    const std::time_t now = std::time(nullptr);
    std::tm today{};
    gmtime_r(&now, &today);
    const int year = today.tm_year + 1900;
    int full = year - year % 100 + two_digits;
    return full > year + 50 ? full - 100 : full;
}

} // namespace

void format_http_date(std::time_t t, char* out) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::memcpy(out, kDays[tm.tm_wday], 3);
    std::memcpy(out + 3, ", ", 2);
    two_digits(out + 5, tm.tm_mday);
    out[7] = ' ';
    std::memcpy(out + 8, kMonths[tm.tm_mon], 3);
    out[11] = ' ';
    const int year = tm.tm_year + 1900;
    two_digits(out + 12, year / 100 % 100);
    two_digits(out + 14, year % 100);
    out[16] = ' ';
    two_digits(out + 17, tm.tm_hour);
    out[19] = ':';
    two_digits(out + 20, tm.tm_min);
    out[22] = ':';
    two_digits(out + 23, tm.tm_sec);
    std::memcpy(out + 25, " GMT", 4);
}

std::optional<std::time_t> parse_http_date(std::string_view text) {
    std::tm tm{};
    const std::size_t comma = text.find(',');
    if (comma == 3 && text.size() == kHttpDateLength) {
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        if (text[4] != ' ' || text[7] != ' ' || text[11] != ' ' || text[16] != ' ' ||
            text.substr(25) != " GMT")
            return std::nullopt;
        tm.tm_mday = digits(text, 5, 2);
        tm.tm_mon = month_number(text.substr(8, 3));
        tm.tm_year = digits(text, 12, 4) - 1900;
        if (!clock_time(text, 17, tm)) return std::nullopt;
        return to_time(tm);
    }
    if (comma != std::string_view::npos) {
        // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
        const std::string_view rest = text.substr(comma + 1);
        if (rest.size() != 23 || rest[0] != ' ' || rest[3] != '-' || rest[7] != '-' ||
            rest[10] != ' ' || rest.substr(19) != " GMT")
            return std::nullopt;
        tm.tm_mday = digits(rest, 1, 2);
        tm.tm_mon = month_number(rest.substr(4, 3));
        const int yy = digits(rest, 8, 2);
        if (yy < 0) return std::nullopt;
        tm.tm_year = rfc850_year(yy) - 1900;
        if (!clock_time(rest, 11, tm)) return std::nullopt;
        return to_time(tm);
    }
    // asctime: "Sun Nov  6 08:49:37 1994"
    if (text.size() != 24 || text[3] != ' ' || text[7] != ' ' || text[10] != ' ' || text[19] != ' ')
        return std::nullopt;
    tm.tm_mon = month_number(text.substr(4, 3));
    tm.tm_mday = text[8] == ' ' ? digits(text, 9, 1) : digits(text, 8, 2);
    tm.tm_year = digits(text, 20, 4) - 1900;
    if (!clock_time(text, 11, tm)) return std::nullopt;
    return to_time(tm);
}

std::string_view current_http_date() {
    thread_local std::time_t cached = -1;
    thread_local char text[kHttpDateLength];
    // CLOCK_REALTIME_COARSE is read from the vDSO without a syscall.
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec != cached) {
        cached = now.tv_sec;
        format_http_date(cached, text);
    }
    return {text, kHttpDateLength};
}

std::string_view http_date_after(std::int64_t seconds) {
    thread_local std::time_t cached = -1;
    thread_local std::int64_t cached_seconds = -1;
    thread_local char text[kHttpDateLength];
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec != cached || seconds != cached_seconds) {
        cached = now.tv_sec;
        cached_seconds = seconds;
        format_http_date(cached + static_cast<std::time_t>(seconds), text);
    }
    return {text, kHttpDateLength};
}

} // namespace weft::http
