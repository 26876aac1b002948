#include "covenant/types/formats.hpp"

namespace covenant::formats {

namespace {

bool digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool hex(char c) noexcept { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int number(std::string_view s, std::size_t pos, std::size_t n) noexcept {
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (i >= s.size() || !digit(s[i])) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

bool leap(int y) noexcept { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(int y, int m) noexcept {
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : days[m - 1];
}

// HH:MM:SS[.frac] at the start of s; returns characters consumed or 0.
std::size_t partial_time(std::string_view s) noexcept {
  if (s.size() < 8 || s[2] != ':' || s[5] != ':') return 0;
  const int h = number(s, 0, 2), mi = number(s, 3, 2), se = number(s, 6, 2);
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60) return 0;
  std::size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t start = i;
    while (i < s.size() && digit(s[i])) ++i;
    if (i == start) return 0;
  }
  return i;
}

// Z, z, +hh:mm or -hh:mm, the whole of s.
bool offset(std::string_view s) noexcept {
  if (s == "Z" || s == "z") return true;
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':') return false;
  const int h = number(s, 1, 2), m = number(s, 4, 2);
  return h >= 0 && h <= 23 && m >= 0 && m <= 59;
}

}  // namespace

bool is_url(std::string_view s) noexcept {
  std::size_t i = 0;
  if (s.empty() || !alpha(s[0])) return false;
  while (i < s.size() && (alpha(s[i]) || digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')) ++i;
  if (s.substr(i, 3) != "://") return false;
  i += 3;
  const std::size_t host = i;
  while (i < s.size() && s[i] != '/' && s[i] != '?' && s[i] != '#') {
    if (space(s[i])) return false;
    ++i;
  }
  if (i == host) return false;
  for (; i < s.size(); ++i)
    if (space(s[i])) return false;
  return true;
}

bool is_uuid(std::string_view s) noexcept {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!hex(s[i])) {
      return false;
    }
  }
  return true;
}

bool is_date(std::string_view s) noexcept {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  const int y = number(s, 0, 4), m = number(s, 5, 2), d = number(s, 8, 2);
  if (y < 0 || m < 1 || m > 12 || d < 1) return false;
  return d <= days_in_month(y, m);
}

bool is_time(std::string_view s) noexcept {
  const std::size_t n = partial_time(s);
  if (n == 0) return false;
  return n == s.size() || offset(s.substr(n));
}

bool is_date_time(std::string_view s) noexcept {
  if (s.size() < 20 || !is_date(s.substr(0, 10))) return false;
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return false;
  const std::string_view rest = s.substr(11);
  const std::size_t n = partial_time(rest);
  return n != 0 && offset(rest.substr(n));
}

bool is_email(std::string_view s) noexcept {
  const std::size_t at = s.find('@');
  if (at == 0 || at == std::string_view::npos || s.find('@', at + 1) != std::string_view::npos) return false;
  for (char c : s)
    if (space(c)) return false;
  const std::string_view domain = s.substr(at + 1);
  const std::size_t dot = domain.rfind('.');
  return dot != std::string_view::npos && dot > 0 && dot + 1 < domain.size();
}

std::optional<std::chrono::sys_time<std::chrono::milliseconds>> parse_date_time(std::string_view s) noexcept {
  if (!is_date_time(s)) return std::nullopt;
  using namespace std::chrono;
  const year_month_day ymd{year{number(s, 0, 4)}, month{static_cast<unsigned>(number(s, 5, 2))},
                           day{static_cast<unsigned>(number(s, 8, 2))}};
  sys_time<milliseconds> t = sys_days{ymd} + hours{number(s, 11, 2)} + minutes{number(s, 14, 2)} +
                             seconds{number(s, 17, 2)};
  std::size_t i = 19;
  if (s[i] == '.') {
    int ms = 0;
    int digits = 0;
    for (++i; i < s.size() && digit(s[i]); ++i, ++digits)
      if (digits < 3) ms = ms * 10 + (s[i] - '0');
    for (; digits < 3; ++digits) ms *= 10;
    t += milliseconds{ms};
  }
  if (s[i] == '+' || s[i] == '-') {
    const minutes off = hours{number(s, i + 1, 2)} + minutes{number(s, i + 4, 2)};
    t -= s[i] == '+' ? off : -off;
  }
  return t;
}

bool matches_format(std::string_view format, std::string_view s) noexcept {
  if (format == "uri" || format == "url") return is_url(s);
  if (format == "uuid") return is_uuid(s);
  if (format == "date-time") return is_date_time(s);
  if (format == "date") return is_date(s);
  if (format == "time") return is_time(s);
  if (format == "email") return is_email(s);
  return true;
}

}  // namespace covenant::formats
