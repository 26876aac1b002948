// Internal: libcurl's handles owned by std::unique_ptr, a request header list built line by line,
// and curl_global_init run once for the whole library (the HTTP engine, health checks, the link
// verifier).
#pragma once

#include <curl/curl.h>

#include <memory>
#include <new>
#include <string>

namespace covenant::detail {

struct curl_url_deleter {
  void operator()(CURLU* u) const noexcept { curl_url_cleanup(u); }
};
struct curl_easy_deleter {
  void operator()(CURL* e) const noexcept { curl_easy_cleanup(e); }
};
struct curl_multi_deleter {
  void operator()(CURLM* m) const noexcept { curl_multi_cleanup(m); }
};
struct curl_slist_deleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};
using curl_url_ptr = std::unique_ptr<CURLU, curl_url_deleter>;
using curl_easy_ptr = std::unique_ptr<CURL, curl_easy_deleter>;
using curl_multi_ptr = std::unique_ptr<CURLM, curl_multi_deleter>;
using curl_header_list = std::unique_ptr<curl_slist, curl_slist_deleter>;

/// Appends `line` ("Name: value") to `list`; throws std::bad_alloc when libcurl cannot.
inline void append_header(curl_header_list& list, const std::string& line) {
  curl_slist* head = curl_slist_append(list.get(), line.c_str());
  if (head == nullptr) throw std::bad_alloc();  // `list` is left as it was
  (void)list.release();                         // the same head, or the first node of an empty list
  list.reset(head);
}

/// curl_global_init, run once for the process; what it returned.
inline CURLcode curl_global() {
  static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
  return result;
}

}  // namespace covenant::detail
