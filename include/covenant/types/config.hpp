// covenant/types/config.hpp - compile-time configuration.
//
// Two kinds of switches:
//
// * Defaults of the compiled library (limits of the decoders, the lenient reader and the schema
//   loaders, the length of an issue's `actual`) are fixed when covenant is built: they are CMake
//   options of the same names, written into the generated covenant/build_config.hpp. The library
//   and every file that includes its headers must see the same values (a default member
//   initializer of decode_options or schema_limit_options is part of a type the library compiled),
//   so a program cannot redefine them: defining one before this header is an error. Change a
//   limit per call with the options structs instead (decode_options::max_depth,
//   lenient_options::max_input_bytes, schema_limit_options, ...), or rebuild covenant with
//   e.g. -DCOVENANT_SCHEMA_MAX_DEPTH=32.
//
//     COVENANT_DEFAULT_MAX_DEPTH        128     nesting the decoders and the lenient reader accept
//     COVENANT_DEFAULT_MAX_INPUT_BYTES  64 MiB  size of a JSON text the decoders accept
//     COVENANT_ACTUAL_MAX_CHARS         40      characters of a value kept in issue::actual
//     COVENANT_SCHEMA_MAX_BYTES         4 MiB   size of a schema file or JSON Schema document
//     COVENANT_SCHEMA_MAX_DEPTH         64      nesting of types, inline objects, expressions
//     COVENANT_SCHEMA_MAX_TYPES         10000   named types one schema may declare
//     COVENANT_SCHEMA_MAX_FIELDS        100000  fields and enum values one schema may declare
//     COVENANT_LENIENT_MAX_INPUT_BYTES  4 MiB   size of a text the lenient reader reads
//     COVENANT_LENIENT_MAX_CANDIDATES   8       candidates the lenient reader returns
//     COVENANT_LENIENT_MAX_NOTES        256     notes kept per lenient candidate
//
// * Header-only switches, which a program may set (before including any covenant header, or on
//   the compiler's command line): they change only templates instantiated for the program's own
//   types, never code or types the library compiled. Give them the same value in every file of
//   the program.
#pragma once

#if defined(COVENANT_DEFAULT_MAX_DEPTH) || defined(COVENANT_DEFAULT_MAX_INPUT_BYTES) || \
    defined(COVENANT_ACTUAL_MAX_CHARS) || defined(COVENANT_SCHEMA_MAX_BYTES) ||          \
    defined(COVENANT_SCHEMA_MAX_DEPTH) || defined(COVENANT_SCHEMA_MAX_TYPES) ||          \
    defined(COVENANT_SCHEMA_MAX_FIELDS) || defined(COVENANT_LENIENT_MAX_INPUT_BYTES) ||  \
    defined(COVENANT_LENIENT_MAX_CANDIDATES) || defined(COVENANT_LENIENT_MAX_NOTES)
#error "covenant: this limit is fixed when the library is built (a CMake option of the same name, \
see covenant/types/config.hpp); a definition in a program would not match the compiled library"
#endif

#include "covenant/build_config.hpp"
// COVENANT_API: on each declaration of the compiled library that programs call (functions defined
// in src/, classes with out-of-line members, exception classes). A shared libcovenant is built with
// hidden visibility and exports only those; a static one leaves the macro empty.
#include "covenant/export.hpp"

/// Smallest enumerator value scanned when reflecting enum names (header-only: reflect.hpp scans
/// the program's own enums with it; the library reflects none of its own).
#ifndef COVENANT_ENUM_MIN
#define COVENANT_ENUM_MIN -128
#endif

/// Largest enumerator value scanned when reflecting enum names (header-only, as above).
#ifndef COVENANT_ENUM_MAX
#define COVENANT_ENUM_MAX 255
#endif
