// covenant/types/media.hpp - images, PDFs and audio as fields of an input struct.
//
//     struct Scan {
//       covenant::image receipt;                 // a file, bytes with a media type, or a URL
//       std::optional<covenant::pdf> invoice;
//       std::string note;
//     };
//     Scan in{covenant::image::file("receipt.jpg"), std::nullopt, "lunch"};
//
// The model sees the input as JSON with each media field replaced by its reference
// ("receipt": "<image 1>") and receives the media themselves as parts of the same message, in that
// order (docs/media.md). A file is read when the value is made; a file that cannot be read, bytes
// that are no known format and a media type of another kind make a value whose error() says why,
// which the contract reports as an input-validation issue at the field's path. The bytes are held
// once and shared by copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant {

enum class media_kind : std::uint8_t { image, pdf, audio };

/// "image", "pdf", "audio"
COVENANT_API std::string_view to_string(media_kind k) noexcept;
/// The kind named by to_string()'s spelling; nullopt otherwise.
COVENANT_API std::optional<media_kind> parse_media_kind(std::string_view name) noexcept;

/// The reference the model sees for the n-th (1-based) media of kind `k` of a message: "<image 1>".
COVENANT_API std::string media_reference(media_kind k, std::size_t n);

/// Numbers the media of one message in the order they are sent, each kind counted apart: the
/// one rule behind "<image 1>", "<pdf 1>", "<image 2>" in the input, the prompt and every body.
class media_numbering {
 public:
  /// The number of the next media of kind `k` (1-based).
  std::size_t next(media_kind k) noexcept { return ++counts_[static_cast<std::size_t>(k)]; }

 private:
  std::size_t counts_[3] = {0, 0, 0};
};

/// The media type the first bytes of `bytes` show (magic numbers): image/png, image/jpeg,
/// image/gif, image/webp, application/pdf, audio/wav, audio/mpeg, audio/flac, audio/ogg,
/// audio/mp4; "" when none of these.
COVENANT_API std::string_view sniff_media_type(std::string_view bytes) noexcept;

/// The kind a media type belongs to (image/..., application/pdf, audio/...); nullopt otherwise.
COVENANT_API std::optional<media_kind> kind_of_media_type(std::string_view media_type) noexcept;

namespace detail {
struct media_data;
}

/// One media input: bytes with their media type, or a URL. Cheap to copy (the bytes are shared).
class COVENANT_API media {
 public:
  /// No media: validating it reports that the field has none.
  media() = default;

  /// The file at `path`, read now. `media_type` empty: sniffed from the bytes.
  static media file(media_kind kind, std::string path, std::string media_type = {});
  /// `bytes` with their media type (empty: sniffed).
  static media bytes(media_kind kind, std::string bytes, std::string media_type = {});
  /// A URL the provider fetches itself (`media_type` empty: taken from the URL's extension when
  /// it has a known one).
  static media url(media_kind kind, std::string url, std::string media_type = {});
  /// A media written as text, as input records (covenant run) and replies name it: an http(s)
  /// URL, a data URL ("data:image/png;base64,..."), a reference to the call's own media
  /// ("<image 1>", resolved by the contract), or else the path of a file, read now (relative
  /// paths taken relative to `root` when it is given). With `read_files` false a path is not
  /// read: the value's error() says that media are named by URL or reference here.
  static media parse(media_kind kind, std::string_view text, std::string_view root = {}, bool read_files = true);

  [[nodiscard]] bool empty() const noexcept { return d_ == nullptr; }
  [[nodiscard]] media_kind kind() const noexcept;
  /// "image/png", "application/pdf", ...; "" for an empty value and for a URL of unknown type.
  [[nodiscard]] const std::string& media_type() const noexcept;
  [[nodiscard]] bool is_url() const noexcept;
  /// The URL of a URL media; "" otherwise.
  [[nodiscard]] const std::string& url() const noexcept;
  /// The bytes ("" for a URL or a reference).
  [[nodiscard]] std::string_view data() const noexcept;
  /// Number of bytes (0 for a URL or a reference).
  [[nodiscard]] std::size_t size() const noexcept;
  /// The file it was read from; "" when it was not.
  [[nodiscard]] const std::string& path() const noexcept;
  /// Why it cannot be sent ("" when it can): the file could not be read, the bytes are no known
  /// format, the media type is not one of its kind.
  [[nodiscard]] const std::string& error() const noexcept;
  /// 1-based number of the call's media of this kind it refers to ("<image 2>" gives 2); 0 when
  /// it is not a reference.
  [[nodiscard]] std::uint32_t reference() const noexcept;
  /// Lower-case hex SHA-256 of the bytes (of the URL text for a URL), computed once.
  [[nodiscard]] const std::string& sha256() const;
  /// "file name" to give a provider that asks for one: the file's name, else "<kind><n>.<ext>".
  [[nodiscard]] std::string file_name(std::size_t n) const;

  /// The media of `originals` this reference names ("<image 2>": the second image, as
  /// media_numbering counts them); null when it is no reference or names none.
  [[nodiscard]] const media* resolve(const std::vector<media>& originals) const noexcept;

  /// Same kind, media type, URL and bytes.
  friend COVENANT_API bool operator==(const media& a, const media& b) noexcept;

 protected:
  /// A value of `kind` that cannot be sent, for the reason `why`.
  static media invalid(media_kind kind, std::string why);

 private:
  explicit media(std::shared_ptr<const detail::media_data> d) noexcept : d_(std::move(d)) {}
  std::shared_ptr<const detail::media_data> d_;
};

/// A media of one kind, the type of an input field (covenant::image, covenant::pdf, covenant::audio).
template <media_kind K>
class media_of : public media {
 public:
  static constexpr media_kind media_kind_v = K;
  using media::url;  // the accessor, beside the factory below
  media_of() = default;
  /// `m` as this kind (a media of another kind makes a value whose error() says so).
  explicit media_of(media m) : media(m.empty() || m.kind() == K ? std::move(m) : wrong_kind(m)) {}

  static media_of file(std::string path, std::string media_type = {}) {
    return media_of(media::file(K, std::move(path), std::move(media_type)));
  }
  static media_of bytes(std::string bytes, std::string media_type = {}) {
    return media_of(media::bytes(K, std::move(bytes), std::move(media_type)));
  }
  static media_of url(std::string url, std::string media_type = {}) {
    return media_of(media::url(K, std::move(url), std::move(media_type)));
  }
  static media_of parse(std::string_view text, std::string_view root = {}, bool read_files = true) {
    return media_of(media::parse(K, text, root, read_files));
  }

 private:
  static media wrong_kind(const media& m) {
    return invalid(K, "is " + std::string(m.kind() == media_kind::pdf ? "a " : "an ") + std::string(to_string(m.kind())) +
                          ", not " + (K == media_kind::pdf ? "a " : "an ") + std::string(to_string(K)));
  }
};

using image = media_of<media_kind::image>;
using pdf = media_of<media_kind::pdf>;
using audio = media_of<media_kind::audio>;

namespace detail {
template <class T>
struct is_media_field : std::false_type {};
template <media_kind K>
struct is_media_field<media_of<K>> : std::true_type {};
template <class T>
inline constexpr bool is_media_v = is_media_field<T>::value;
}  // namespace detail

/// The media as cassettes and the audit log keep them: a compact JSON array of
/// {"kind", "type", "bytes", "sha256"} ({"kind", "type", "url", "sha256"} for a URL; the SHA-256 of
/// the bytes, of the URL text for a URL), in order; never the bytes. "[]" for none.
COVENANT_API std::string media_digest(const std::vector<media>& parts);

/// What one provider accepts in one request (docs/media.md says where each figure comes from).
/// Sizes count the bytes as they are sent (base64: 4/3 of the file); 0 means no limit of its own.
struct media_limits {
  std::string provider;                  ///< "OpenAI Chat Completions", "Anthropic Messages"
  std::vector<std::string> image_types;  ///< accepted media types of images
  std::vector<std::string> audio_types;  ///< accepted media types of audio (empty: no audio)
  bool pdf = true;                       ///< PDFs are accepted
  bool image_urls = true;                ///< images may be sent as URLs
  bool pdf_urls = false;                 ///< PDFs may be sent as URLs
  std::size_t max_image_bytes = 0;       ///< one image
  std::size_t max_pdf_bytes = 0;         ///< one PDF
  std::size_t max_audio_bytes = 0;       ///< one audio clip
  std::size_t max_images = 0;            ///< images in one request
  std::size_t max_total_bytes = 0;       ///< all media of one request together
};

/// The media of one request checked so far against `limits` (null: only what holds for every
/// provider: readable, a known type of its kind).
struct media_tally {
  const media_limits* limits = nullptr;
  /// The input's own media, when the media checked are a repaired input's: a reference
  /// ("<image 1>") must name one of them. Null: a reference names nothing and is refused.
  const std::vector<media>* originals = nullptr;
  std::size_t images = 0;       ///< images seen so far (refused ones too)
  std::size_t total_bytes = 0;  ///< bytes as sent of the media accepted so far
  /// A media was refused: the input cannot be sent, and no repair by the model can fix it.
  bool refused = false;
};

/// Why `m` cannot go into a request whose earlier media are counted in `tally` ("" when it can;
/// then it is counted). The one check the typed and the runtime-schema contracts apply.
COVENANT_API std::string check_media(const media& m, media_tally& tally);

}  // namespace covenant
