// Media inputs (covenant/types/media.hpp): reading files, recognising formats by their magic
// numbers, data URLs, and the one check of a media against a provider's limits.
#include "covenant/types/media.hpp"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "covenant/types/encode.hpp"
#include "types/media_codec.hpp"

namespace covenant {

namespace detail {
struct media_data {
  media_kind kind = media_kind::image;
  std::string type;
  std::string url;
  std::string bytes;
  std::string path;
  std::string error;
  std::uint32_t ref = 0;
  mutable std::once_flag hashed;
  mutable std::string sha;
};
}  // namespace detail

namespace {

const std::string empty_string;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view article(media_kind k) { return k == media_kind::pdf ? "a " : "an "; }

// The type a URL's path ends with, when it is a known extension.
std::string type_of_extension(std::string_view name) {
  if (const std::size_t q = name.find_first_of("?#"); q != std::string_view::npos) name = name.substr(0, q);
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || name.find('/', dot) != std::string_view::npos) return {};
  const std::string ext = lower(name.substr(dot + 1));
  if (ext == "png") return "image/png";
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "gif") return "image/gif";
  if (ext == "webp") return "image/webp";
  if (ext == "pdf") return "application/pdf";
  if (ext == "wav") return "audio/wav";
  if (ext == "mp3") return "audio/mpeg";
  if (ext == "flac") return "audio/flac";
  if (ext == "ogg") return "audio/ogg";
  if (ext == "m4a") return "audio/mp4";
  return {};
}

int base64_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Base64 (standard or URL alphabet, padding optional) to bytes; nullopt on any other character.
std::optional<std::string> decode_base64(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    const int v = base64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xffu));
    }
  }
  return out;
}

// The type of `d` settled from what was given and what the bytes show; sets the error when they
// do not fit its kind.
void settle_type(detail::media_data& d, std::string given) {
  given = lower(given);
  const std::string_view seen = sniff_media_type(d.bytes);
  if (given.empty()) {
    if (seen.empty()) {
      d.error = "is no " + std::string(to_string(d.kind)) + " format covenant knows (the first bytes are not " +
                (d.kind == media_kind::image ? "PNG, JPEG, GIF or WebP"
                 : d.kind == media_kind::pdf ? "a PDF header"
                                             : "WAV, MP3, FLAC, Ogg or MP4 audio") +
                "); give its media type";
      return;
    }
    given = std::string(seen);
  } else if (!seen.empty() && seen != given) {
    d.type = given;
    d.error = "is said to be " + given + " but its bytes are " + std::string(seen);
    return;
  }
  d.type = std::move(given);
  if (kind_of_media_type(d.type) != d.kind)
    d.error = "has media type " + d.type + ", which is not " + std::string(article(d.kind)) + std::string(to_string(d.kind)) + " type";
}

// "5.0 MB (5242884 bytes)": the exact count too, as two sizes a few bytes apart look the same in MB.
std::string megabytes(std::size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MB (%zu bytes)", static_cast<double>(n) / (1024.0 * 1024.0), n);
  return buf;
}

}  // namespace

std::string_view to_string(media_kind k) noexcept {
  switch (k) {
    case media_kind::image: return "image";
    case media_kind::pdf: return "pdf";
    case media_kind::audio: return "audio";
  }
  return "image";
}

std::string media_reference(media_kind k, std::size_t n) {
  std::string out(1, '<');
  out.append(to_string(k)).append(" ").append(std::to_string(n)).append(">");
  return out;
}

std::optional<media_kind> parse_media_kind(std::string_view name) noexcept {
  if (name == "image") return media_kind::image;
  if (name == "pdf") return media_kind::pdf;
  if (name == "audio") return media_kind::audio;
  return std::nullopt;
}

std::string_view sniff_media_type(std::string_view b) noexcept {
  const auto starts = [&](std::size_t at, std::string_view magic) {
    return b.size() >= at + magic.size() && b.compare(at, magic.size(), magic) == 0;
  };
  if (starts(0, "\x89PNG\r\n\x1a\n")) return "image/png";
  if (starts(0, "\xff\xd8\xff")) return "image/jpeg";
  if (starts(0, "GIF87a") || starts(0, "GIF89a")) return "image/gif";
  if (starts(0, "RIFF") && starts(8, "WEBP")) return "image/webp";
  if (starts(0, "%PDF-")) return "application/pdf";
  if (starts(0, "RIFF") && starts(8, "WAVE")) return "audio/wav";
  if (starts(0, "ID3")) return "audio/mpeg";
  if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0xff && (static_cast<unsigned char>(b[1]) & 0xe6) == 0xe2)
    return "audio/mpeg";  // an MPEG audio frame (layer III) without an ID3 tag
  if (starts(0, "fLaC")) return "audio/flac";
  if (starts(0, "OggS")) return "audio/ogg";
  if (starts(4, "ftypM4A")) return "audio/mp4";
  return {};
}

std::optional<media_kind> kind_of_media_type(std::string_view t) noexcept {
  if (t.starts_with("image/")) return media_kind::image;
  if (t == "application/pdf") return media_kind::pdf;
  if (t.starts_with("audio/")) return media_kind::audio;
  return std::nullopt;
}

media media::file(media_kind kind, std::string path, std::string media_type) {
  auto d = std::make_shared<detail::media_data>();
  d->kind = kind;
  d->path = std::move(path);
  errno = 0;
  std::ifstream in(d->path, std::ios::binary);
  if (!in) {
    const int e = errno;
    d->error = "cannot read the file " + d->path + (e != 0 ? std::string(": ") + std::strerror(e) : std::string());
    return media(std::move(d));
  }
  d->bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    d->error = "cannot read the file " + d->path;
    return media(std::move(d));
  }
  if (d->bytes.empty()) {
    d->error = "the file " + d->path + " is empty";
    return media(std::move(d));
  }
  settle_type(*d, std::move(media_type));
  return media(std::move(d));
}

media media::bytes(media_kind kind, std::string bytes, std::string media_type) {
  auto d = std::make_shared<detail::media_data>();
  d->kind = kind;
  d->bytes = std::move(bytes);
  if (d->bytes.empty()) d->error = "has no bytes";
  else settle_type(*d, std::move(media_type));
  return media(std::move(d));
}

media media::url(media_kind kind, std::string url, std::string media_type) {
  auto d = std::make_shared<detail::media_data>();
  d->kind = kind;
  d->url = std::move(url);
  d->type = media_type.empty() ? type_of_extension(d->url) : lower(media_type);
  if (!d->url.starts_with("https://") && !d->url.starts_with("http://"))
    d->error = "is not an http(s) URL: " + d->url;
  else if (!d->type.empty() && kind_of_media_type(d->type) != kind)
    d->error = "has media type " + d->type + ", which is not " + std::string(article(kind)) + std::string(to_string(kind)) + " type";
  return media(std::move(d));
}

media media::invalid(media_kind kind, std::string why) {
  auto d = std::make_shared<detail::media_data>();
  d->kind = kind;
  d->error = std::move(why);
  return media(std::move(d));
}

media media::parse(media_kind kind, std::string_view text, std::string_view root, bool read_files) {
  if (text.starts_with("https://") || text.starts_with("http://")) return url(kind, std::string(text));
  if (text.starts_with("data:")) {
    const std::size_t comma = text.find(',');
    const std::string_view head = text.substr(5, comma == std::string_view::npos ? 0 : comma - 5);
    if (comma == std::string_view::npos || !head.ends_with(";base64"))
      return invalid(kind, "is a data URL that is not base64 (data:<media type>;base64,<data>)");
    std::optional<std::string> bytes_of = decode_base64(text.substr(comma + 1));
    if (!bytes_of) return invalid(kind, "is a data URL whose data is not base64");
    return bytes(kind, std::move(*bytes_of), std::string(head.substr(0, head.size() - 7)));
  }
  // "<image 2>": the call's second image.
  const std::string prefix = "<" + std::string(to_string(kind)) + " ";
  if (text.starts_with(prefix) && text.ends_with(">")) {
    const std::string_view digits = text.substr(prefix.size(), text.size() - prefix.size() - 1);
    std::uint32_t n = 0;
    bool ok = !digits.empty() && digits.size() <= 6;
    for (const char c : digits) {
      if (c < '0' || c > '9') ok = false;
      else n = n * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (ok && n > 0) {
      auto d = std::make_shared<detail::media_data>();
      d->kind = kind;
      d->ref = n;
      return media(std::move(d));
    }
  }
  if (!read_files)
    return invalid(kind, "is not an http(s) URL, a data URL or a reference such as \"<" + std::string(to_string(kind)) +
                             " 1>\"");
  if (text.empty()) return invalid(kind, "is an empty path");
  std::string path(text);
  if (!root.empty() && path.front() != '/') {
    std::string joined(root);
    if (joined.back() != '/') joined.push_back('/');
    path = joined + path;
  }
  return file(kind, std::move(path));
}

const media* media::resolve(const std::vector<media>& originals) const noexcept {
  if (reference() == 0) return nullptr;
  media_numbering numbering;
  for (const media& o : originals)
    if (o.kind() == kind() && numbering.next(kind()) == reference()) return &o;
  return nullptr;
}

media_kind media::kind() const noexcept { return d_ ? d_->kind : media_kind::image; }
const std::string& media::media_type() const noexcept { return d_ ? d_->type : empty_string; }
bool media::is_url() const noexcept { return d_ && !d_->url.empty(); }
const std::string& media::url() const noexcept { return d_ ? d_->url : empty_string; }
std::string_view media::data() const noexcept { return d_ ? std::string_view(d_->bytes) : std::string_view(); }
std::size_t media::size() const noexcept { return d_ ? d_->bytes.size() : 0; }
const std::string& media::path() const noexcept { return d_ ? d_->path : empty_string; }
const std::string& media::error() const noexcept { return d_ ? d_->error : empty_string; }
std::uint32_t media::reference() const noexcept { return d_ ? d_->ref : 0; }

const std::string& media::sha256() const {
  if (!d_) return empty_string;
  std::call_once(d_->hashed, [&] { d_->sha = detail::sha256_hex(d_->url.empty() ? d_->bytes : d_->url); });
  return d_->sha;
}

std::string media::file_name(std::size_t n) const {
  if (d_ && !d_->path.empty()) {
    const std::size_t slash = d_->path.find_last_of('/');
    return slash == std::string::npos ? d_->path : d_->path.substr(slash + 1);
  }
  std::string ext = "bin";
  const std::string& t = media_type();
  if (const std::size_t slash = t.find('/'); slash != std::string::npos) ext = t.substr(slash + 1);
  if (ext == "jpeg") ext = "jpg";
  if (ext == "mpeg") ext = "mp3";
  return std::string(to_string(kind())) + std::to_string(n) + "." + ext;
}

bool operator==(const media& a, const media& b) noexcept {
  if (a.d_ == b.d_) return true;
  if (!a.d_ || !b.d_) return false;
  return a.d_->kind == b.d_->kind && a.d_->type == b.d_->type && a.d_->url == b.d_->url && a.d_->ref == b.d_->ref &&
         a.d_->error == b.d_->error && a.d_->bytes == b.d_->bytes;
}

std::string media_digest(const std::vector<media>& parts) {
  std::string out(1, '[');
  for (const media& m : parts) {
    if (out.size() > 1) out.push_back(',');
    out.append("{\"kind\":");
    detail::append_json_string(out, to_string(m.kind()));
    out.append(",\"type\":");
    detail::append_json_string(out, m.media_type());
    if (m.is_url()) {
      out.append(",\"url\":");
      detail::append_json_string(out, m.url());
    } else {
      out.append(",\"bytes\":").append(std::to_string(m.size()));
    }
    out.append(",\"sha256\":");
    detail::append_json_string(out, m.sha256());
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::string check_media(const media& m, media_tally& tally) {
  if (m.empty()) return "has no media (no file, bytes or URL)";
  if (!m.error().empty()) return m.error();
  if (m.reference() != 0) {
    if (tally.originals == nullptr)
      return "is a reference (" + media_reference(m.kind(), m.reference()) +
             ") but names no media here: give a file, bytes or a URL";
    if (m.resolve(*tally.originals) == nullptr)
      return "refers to " + media_reference(m.kind(), m.reference()) + ", which the input does not have";
    return {};
  }
  if (m.kind() == media_kind::image) ++tally.images;  // refused ones too: "image 102" is the 102nd
  if (tally.limits == nullptr) return {};
  const media_limits& l = *tally.limits;
  const std::string& type = m.media_type();
  const auto listed = [&](const std::vector<std::string>& types) {
    std::string out;
    for (const std::string& t : types) out += (out.empty() ? "" : ", ") + t;
    return out;
  };
  std::size_t max_one = 0;
  switch (m.kind()) {
    case media_kind::image:
      if (m.is_url() && !l.image_urls) return l.provider + " takes images as bytes only, not as URLs";
      if (!type.empty() && std::find(l.image_types.begin(), l.image_types.end(), type) == l.image_types.end())
        return type + " is not an image type " + l.provider + " takes (" + listed(l.image_types) + ")";
      if (l.max_images != 0 && tally.images > l.max_images)
        return "is image " + std::to_string(tally.images) + " of the request; " + l.provider + " takes at most " +
               std::to_string(l.max_images) + " images in one request";
      max_one = l.max_image_bytes;
      break;
    case media_kind::pdf:
      if (!l.pdf) return l.provider + " takes no PDFs";
      if (m.is_url() && !l.pdf_urls)
        return l.provider + " takes PDFs as bytes only, not as URLs (read the file: covenant::pdf::file)";
      max_one = l.max_pdf_bytes;
      break;
    case media_kind::audio:
      if (l.audio_types.empty()) return l.provider + " takes no audio";
      if (m.is_url()) return l.provider + " takes audio as bytes only, not as URLs";
      if (std::find(l.audio_types.begin(), l.audio_types.end(), type) == l.audio_types.end())
        return type + " is not an audio type " + l.provider + " takes (" + listed(l.audio_types) + ")";
      max_one = l.max_audio_bytes;
      break;
  }
  const std::size_t sent = m.is_url() ? 0 : detail::base64_length(m.size());
  if (max_one != 0 && sent > max_one)
    return "is " + megabytes(sent) + " as sent (base64); " + l.provider + " takes at most " + megabytes(max_one) +
           " per " + std::string(m.kind() == media_kind::pdf ? "PDF" : to_string(m.kind()));
  if (l.max_total_bytes != 0 && tally.total_bytes + sent > l.max_total_bytes)
    return "brings the request's media to " + megabytes(tally.total_bytes + sent) + " as sent (base64); " + l.provider +
           " takes at most " + megabytes(l.max_total_bytes) + " in one request";
  tally.total_bytes += sent;
  return {};
}

}  // namespace covenant
