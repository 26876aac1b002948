// The stream reader's cost per piece, counted in bytes allocated. Its own executable
// (covenant_allocation_tests): counting replaces the global operator new and delete, which would
// otherwise apply to every test and take from AddressSanitizer its check that each block is freed
// the way it was allocated.
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>

// Bytes allocated by this thread while counting. Every form of new and delete that is not
// over-aligned is replaced together, so that a block always goes back the way it came.
namespace {
thread_local std::size_t* counted_bytes = nullptr;
void* counted_malloc(std::size_t n) noexcept {
  if (counted_bytes != nullptr) *counted_bytes += n;
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

// With streaming attributes, each piece of a stream costs about its own length: the values the
// attributes hold back are taken out of the partial value in place, not by copying the whole value
// after every piece. 3 000 finished items, then their pieces one by one: the bytes allocated stay a
// small multiple of the text (a copy per piece allocates thousands of times the text).
TEST(StreamAllocation, AStreamWithStreamingAttributesCostsAboutItsLength) {
  const auto set = covenant::schema_set::parse(R"(
    class Item {
      name string
      tags string[] @stream.done
    }
    class Catalogue {
      items Item[]
      note string @stream.done
    }
  )");
  const auto model = set.model_for("Catalogue");
  std::string text = R"({"items": [)";
  for (int i = 0; i < 3000; ++i)
    text += (i > 0 ? ", " : "") + std::string(R"({"name": "item )") + std::to_string(i) + R"(", "tags": ["a", "b"]})";
  text += R"(], "note": "the end"})";
  covenant::detail::dynamic_stream_reader stream(model, {}, covenant::strictness::coerce);
  std::size_t bytes = 0;
  counted_bytes = &bytes;
  for (std::size_t at = 0; at < text.size(); at += 16) stream.feed(text.substr(at, 16));
  counted_bytes = nullptr;
  EXPECT_LT(bytes, 200 * text.size()) << bytes << " bytes allocated for a text of " << text.size();
  ASSERT_EQ(stream.view().value().at("items").as_array().size(), 3000u);
  EXPECT_EQ(stream.view().value().at("note"), "the end");
}

}  // namespace
