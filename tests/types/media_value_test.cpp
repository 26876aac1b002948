// Media values (covenant/types/media.hpp): the type sniffed from the bytes, files read at once,
// bytes with a given type, URLs, the text forms parse() reads (URLs, data URLs, references,
// paths), SHA-256, file names, the digest that names each media without its bytes, equality.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;

TEST_F(MediaValue, SniffsEachKnownFormatAndNothingElse) {
  EXPECT_EQ(covenant::sniff_media_type(png_bytes), "image/png");
  EXPECT_EQ(covenant::sniff_media_type(jpeg_bytes), "image/jpeg");
  EXPECT_EQ(covenant::sniff_media_type(gif_bytes), "image/gif");
  EXPECT_EQ(covenant::sniff_media_type(std::string("RIFF\x10\0\0\0WEBPVP8 ", 16)), "image/webp");
  EXPECT_EQ(covenant::sniff_media_type(pdf_bytes), "application/pdf");
  EXPECT_EQ(covenant::sniff_media_type(wav_bytes), "audio/wav");
  EXPECT_EQ(covenant::sniff_media_type(mp3_bytes), "audio/mpeg");
  EXPECT_EQ(covenant::sniff_media_type(std::string("\xff\xfb\x90\x64", 4)), "audio/mpeg");  // a bare MPEG frame
  EXPECT_EQ(covenant::sniff_media_type(flac_bytes), "audio/flac");
  EXPECT_EQ(covenant::sniff_media_type(std::string("OggS\0\x02", 6)), "audio/ogg");
  EXPECT_EQ(covenant::sniff_media_type(std::string("\0\0\0\x20" "ftypM4A ", 12)), "audio/mp4");
  EXPECT_EQ(covenant::sniff_media_type(bmp_bytes), "");
  EXPECT_EQ(covenant::sniff_media_type(""), "");
  EXPECT_EQ(covenant::sniff_media_type("\x89PNG"), "");  // a cut-off signature
  EXPECT_EQ(covenant::kind_of_media_type("image/bmp"), media_kind::image);
  EXPECT_EQ(covenant::kind_of_media_type("application/pdf"), media_kind::pdf);
  EXPECT_EQ(covenant::kind_of_media_type("audio/wav"), media_kind::audio);
  EXPECT_EQ(covenant::kind_of_media_type("text/plain"), std::nullopt);
  EXPECT_EQ(covenant::media_reference(media_kind::image, 2), "<image 2>");
  EXPECT_EQ(covenant::media_reference(media_kind::pdf, 1), "<pdf 1>");
  EXPECT_EQ(covenant::media_reference(media_kind::audio, 10), "<audio 10>");
  EXPECT_EQ(covenant::parse_media_kind("pdf"), media_kind::pdf);
  EXPECT_EQ(covenant::parse_media_kind("video"), std::nullopt);
}

TEST_F(MediaValue, AFileIsReadNowAndItsTypeSniffed) {
  const std::string p = write("receipt.png", png_bytes);
  const covenant::image m = covenant::image::file(p);
  EXPECT_EQ(m.error(), "");
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.kind(), media_kind::image);
  EXPECT_EQ(m.media_type(), "image/png");
  EXPECT_EQ(m.data(), png_bytes);
  EXPECT_EQ(m.size(), png_bytes.size());
  EXPECT_EQ(m.path(), p);
  EXPECT_FALSE(m.is_url());
  EXPECT_EQ(url_of(m), "");
  EXPECT_EQ(m.reference(), 0u);
  // read now: removing the file afterwards changes nothing
  fs::remove(p);
  EXPECT_EQ(m.data(), png_bytes);
  // a copy shares the bytes
  const covenant::image copy = m;
  EXPECT_EQ(copy.data().data(), m.data().data());
  EXPECT_TRUE(copy == m);

  const covenant::pdf doc = covenant::pdf::file(write("invoice.pdf", pdf_bytes));
  EXPECT_EQ(doc.error(), "");
  EXPECT_EQ(doc.media_type(), "application/pdf");
  const covenant::audio clip = covenant::audio::file(write("clip.mp3", mp3_bytes));
  EXPECT_EQ(clip.error(), "");
  EXPECT_EQ(clip.media_type(), "audio/mpeg");
}

TEST_F(MediaValue, AMissingFileIsAnErrorNamingThePath) {
  const std::string p = path("nowhere.png");
  const covenant::image m = covenant::image::file(p);
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.error(), "cannot read the file " + p + ": No such file or directory");
  EXPECT_EQ(m.path(), p);
  EXPECT_EQ(m.size(), 0u);
  const covenant::image empty = covenant::image::file(write("empty.png", ""));
  EXPECT_EQ(empty.error(), "the file " + path("empty.png") + " is empty");
}

TEST_F(MediaValue, BytesWithAGivenTypeAndTypesThatContradictTheBytes) {
  const covenant::image given = covenant::image::bytes(png_bytes, "IMAGE/PNG");
  EXPECT_EQ(given.error(), "");
  EXPECT_EQ(given.media_type(), "image/png");  // lower-cased
  EXPECT_EQ(given.data(), png_bytes);
  EXPECT_EQ(given.path(), "");

  // a type the bytes contradict
  const covenant::image wrong = covenant::image::bytes(png_bytes, "image/jpeg");
  EXPECT_EQ(wrong.error(), "is said to be image/jpeg but its bytes are image/png");
  // a type the bytes do not show (not sniffable) is taken as given
  const covenant::image bmp = covenant::image::bytes(bmp_bytes, "image/bmp");
  EXPECT_EQ(bmp.error(), "");
  EXPECT_EQ(bmp.media_type(), "image/bmp");
  // a type of another kind
  const covenant::image pdf_type = covenant::image::bytes(bmp_bytes, "application/pdf");
  EXPECT_EQ(pdf_type.error(), "has media type application/pdf, which is not an image type");
  // unknown bytes without a type
  const covenant::image unknown = covenant::image::bytes(bmp_bytes);
  EXPECT_EQ(unknown.error(),
            "is no image format covenant knows (the first bytes are not PNG, JPEG, GIF or WebP); give its media type");
  EXPECT_EQ(covenant::pdf::bytes("hello").error(),
            "is no pdf format covenant knows (the first bytes are not a PDF header); give its media type");
  EXPECT_EQ(covenant::audio::bytes("hello").error(),
            "is no audio format covenant knows (the first bytes are not WAV, MP3, FLAC, Ogg or MP4 audio); give its "
            "media type");
  EXPECT_EQ(covenant::image::bytes("").error(), "has no bytes");
}

TEST_F(MediaValue, BytesOfAnotherKindAreAnError) {
  const covenant::image m = covenant::image::bytes(pdf_bytes);
  EXPECT_EQ(m.kind(), media_kind::image);
  EXPECT_EQ(m.error(), "has media type application/pdf, which is not an image type");
  EXPECT_EQ(covenant::pdf::bytes(png_bytes).error(), "has media type image/png, which is not a pdf type");
  EXPECT_EQ(covenant::audio::bytes(png_bytes).error(), "has media type image/png, which is not an audio type");
  // a media of another kind made into an image
  const covenant::image from_pdf(media::bytes(media_kind::pdf, pdf_bytes));
  EXPECT_EQ(from_pdf.kind(), media_kind::image);
  EXPECT_EQ(from_pdf.error(), "is a pdf, not an image");
  const covenant::pdf from_image(media::bytes(media_kind::image, png_bytes));
  EXPECT_EQ(from_image.error(), "is an image, not a pdf");
  // an empty media stays empty
  EXPECT_TRUE(covenant::image(media()).empty());
  EXPECT_TRUE(covenant::image().empty());
  EXPECT_EQ(covenant::image().error(), "");
}

TEST_F(MediaValue, UrlsTakeTheirTypeFromAKnownExtension) {
  const covenant::image png = covenant::image::url("https://example.com/scans/r.PNG?size=large#top");
  EXPECT_EQ(png.error(), "");
  EXPECT_TRUE(png.is_url());
  EXPECT_EQ(url_of(png), "https://example.com/scans/r.PNG?size=large#top");
  EXPECT_EQ(png.media_type(), "image/png");
  EXPECT_EQ(png.size(), 0u);
  EXPECT_EQ(png.data(), "");

  const covenant::image bare = covenant::image::url("https://example.com/scans/r");
  EXPECT_EQ(bare.error(), "");
  EXPECT_EQ(bare.media_type(), "");
  const covenant::image dotted_dir = covenant::image::url("https://example.com/v1.2/scan");
  EXPECT_EQ(dotted_dir.media_type(), "");
  const covenant::image given = covenant::image::url("http://example.com/r", "image/JPEG");
  EXPECT_EQ(given.media_type(), "image/jpeg");
  EXPECT_EQ(covenant::pdf::url("https://example.com/a.pdf").media_type(), "application/pdf");

  EXPECT_EQ(covenant::image::url("https://example.com/a.pdf").error(),
            "has media type application/pdf, which is not an image type");
  EXPECT_EQ(covenant::image::url("ftp://example.com/a.png").error(), "is not an http(s) URL: ftp://example.com/a.png");
}

TEST_F(MediaValue, ParseReadsUrlsDataUrlsReferencesAndPaths) {
  const covenant::image url = covenant::image::parse("https://x.test/y.png");
  EXPECT_TRUE(url.is_url());
  EXPECT_EQ(url_of(url), "https://x.test/y.png");
  EXPECT_EQ(url.media_type(), "image/png");
  EXPECT_EQ(url.error(), "");

  const covenant::image data = covenant::image::parse("data:image/png;base64," + b64(png_bytes));
  EXPECT_EQ(data.error(), "");
  EXPECT_FALSE(data.is_url());
  EXPECT_EQ(data.data(), png_bytes);
  EXPECT_EQ(data.media_type(), "image/png");
  // the URL-safe alphabet without padding
  std::string url_safe = b64(jpeg_bytes + "\xfb\xff");
  for (char& c : url_safe) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (url_safe.back() == '=') url_safe.pop_back();
  EXPECT_EQ(covenant::image::parse("data:image/jpeg;base64," + url_safe).data(), jpeg_bytes + "\xfb\xff");
  // the type of a data URL is kept, and checked against the bytes
  EXPECT_EQ(covenant::image::parse("data:image/gif;base64," + b64(png_bytes)).error(),
            "is said to be image/gif but its bytes are image/png");
  EXPECT_EQ(covenant::image::parse("data:image/png," + png_bytes).error(),
            "is a data URL that is not base64 (data:<media type>;base64,<data>)");
  EXPECT_EQ(covenant::image::parse("data:image/png;base64,%%%").error(), "is a data URL whose data is not base64");

  const covenant::image ref = covenant::image::parse("<image 2>");
  EXPECT_EQ(ref.error(), "");
  EXPECT_EQ(ref.reference(), 2u);
  EXPECT_EQ(ref.kind(), media_kind::image);
  EXPECT_EQ(ref.size(), 0u);
  EXPECT_FALSE(ref.is_url());
  EXPECT_EQ(covenant::pdf::parse("<pdf 12>").reference(), 12u);
  EXPECT_EQ(covenant::image::parse("<image 0>", {}, false).reference(), 0u);  // not a reference: 1-based

  write("receipt.jpg", jpeg_bytes);
  const covenant::image relative = covenant::image::parse("receipt.jpg", dir());
  EXPECT_EQ(relative.error(), "");
  EXPECT_EQ(relative.path(), dir() + "/receipt.jpg");
  EXPECT_EQ(relative.media_type(), "image/jpeg");
  EXPECT_EQ(relative.data(), jpeg_bytes);
  const covenant::image with_slash = covenant::image::parse("receipt.jpg", dir() + "/");
  EXPECT_EQ(with_slash.path(), dir() + "/receipt.jpg");
  const covenant::image absolute = covenant::image::parse(path("receipt.jpg"), "/elsewhere");
  EXPECT_EQ(absolute.path(), path("receipt.jpg"));
  EXPECT_EQ(absolute.error(), "");

  const covenant::image missing = covenant::image::parse("gone.png", dir());
  EXPECT_EQ(missing.error(), "cannot read the file " + dir() + "/gone.png: No such file or directory");
}

TEST_F(MediaValue, ParseWithoutReadingFilesRefusesAPath) {
  write("receipt.jpg", jpeg_bytes);
  const covenant::image m = covenant::image::parse("receipt.jpg", dir(), false);
  EXPECT_EQ(m.error(), "is not an http(s) URL, a data URL or a reference such as \"<image 1>\"");
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.path(), "");
  EXPECT_EQ(covenant::pdf::parse("<image 1>", {}, false).error(),
            "is not an http(s) URL, a data URL or a reference such as \"<pdf 1>\"");
  // the forms that are no file are read as with files
  EXPECT_EQ(covenant::image::parse("<image 3>", {}, false).reference(), 3u);
  EXPECT_EQ(url_of(covenant::image::parse("https://x.test/y", {}, false)), "https://x.test/y");
}

TEST_F(MediaValue, Sha256OfTheBytesOrOfTheUrl) {
  const covenant::image m = covenant::image::bytes("abc", "image/png");
  EXPECT_EQ(m.sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(m.sha256(), m.sha256());  // computed once
  EXPECT_EQ(covenant::image::url("abc").sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(covenant::image().sha256(), "");
}

TEST_F(MediaValue, FileNames) {
  EXPECT_EQ(covenant::pdf::file(write("invoice 2024.pdf", pdf_bytes)).file_name(3), "invoice 2024.pdf");
  EXPECT_EQ(covenant::pdf::bytes(pdf_bytes).file_name(2), "pdf2.pdf");
  EXPECT_EQ(covenant::image::bytes(jpeg_bytes).file_name(1), "image1.jpg");
  EXPECT_EQ(covenant::image::bytes(png_bytes).file_name(4), "image4.png");
  EXPECT_EQ(covenant::audio::bytes(mp3_bytes).file_name(1), "audio1.mp3");
  EXPECT_EQ(covenant::audio::bytes(wav_bytes).file_name(2), "audio2.wav");
  EXPECT_EQ(covenant::image::url("https://x.test/scan").file_name(1), "image1.bin");
}

TEST_F(MediaValue, TheDigestNamesEachMediaWithoutItsBytes) {
  const covenant::image png = covenant::image::bytes(png_bytes);
  const covenant::pdf url = covenant::pdf::url("https://x.test/a.pdf");
  const std::string digest = covenant::media_digest({png, url});
  EXPECT_EQ(json::parse(digest),
            (json::array{json::object{{"kind", "image"}, {"type", "image/png"}, {"bytes", png_bytes.size()},
                                      {"sha256", png.sha256()}},
                         json::object{{"kind", "pdf"}, {"type", "application/pdf"}, {"url", "https://x.test/a.pdf"},
                                      {"sha256", url.sha256()}}}));
  EXPECT_EQ(digest.find(b64(png_bytes)), std::string::npos);
  EXPECT_EQ(covenant::media_digest({}), "[]");
}

TEST_F(MediaValue, EqualityComparesKindTypeUrlAndBytes) {
  EXPECT_TRUE(covenant::image::bytes(png_bytes) == covenant::image::bytes(std::string(png_bytes)));
  EXPECT_FALSE(covenant::image::bytes(png_bytes) == covenant::image::bytes(jpeg_bytes));
  EXPECT_TRUE(covenant::image::url("https://x.test/a.png") == covenant::image::url("https://x.test/a.png"));
  EXPECT_FALSE(covenant::image::url("https://x.test/a.png") == covenant::image::url("https://x.test/b.png"));
  EXPECT_FALSE(covenant::image::parse("<image 1>") == covenant::image::parse("<image 2>"));
  EXPECT_FALSE(covenant::image() == covenant::image::bytes(png_bytes));
  EXPECT_TRUE(covenant::image() == covenant::image());
}

}  // namespace
