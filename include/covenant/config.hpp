// covenant/config.hpp - compile-time configuration switches.
//
// Every switch can be overridden by defining the macro before including any covenant header
// (or on the compiler command line).
#pragma once

/// Smallest enumerator value scanned when reflecting enum names.
#ifndef COVENANT_ENUM_MIN
#define COVENANT_ENUM_MIN -128
#endif

/// Largest enumerator value scanned when reflecting enum names.
#ifndef COVENANT_ENUM_MAX
#define COVENANT_ENUM_MAX 255
#endif

/// Default maximum nesting depth of JSON arrays/objects accepted by the decoders.
#ifndef COVENANT_DEFAULT_MAX_DEPTH
#define COVENANT_DEFAULT_MAX_DEPTH 128
#endif

/// Default maximum size in bytes of a JSON text accepted by the decoders (64 MiB).
#ifndef COVENANT_DEFAULT_MAX_INPUT_BYTES
#define COVENANT_DEFAULT_MAX_INPUT_BYTES (64u * 1024u * 1024u)
#endif

/// Number of characters of an offending value kept in an issue's `actual` before eliding.
#ifndef COVENANT_ACTUAL_MAX_CHARS
#define COVENANT_ACTUAL_MAX_CHARS 40
#endif

/// Largest schema file (or JSON Schema document) accepted by the runtime-schema loaders (4 MiB).
#ifndef COVENANT_SCHEMA_MAX_BYTES
#define COVENANT_SCHEMA_MAX_BYTES (4u * 1024u * 1024u)
#endif

/// Deepest nesting accepted in a schema: type expressions, inline objects, @check expressions,
/// JSON Schema subschemas.
#ifndef COVENANT_SCHEMA_MAX_DEPTH
#define COVENANT_SCHEMA_MAX_DEPTH 64
#endif

/// Most named types (classes, enums, aliases, inline objects) one schema may declare.
#ifndef COVENANT_SCHEMA_MAX_TYPES
#define COVENANT_SCHEMA_MAX_TYPES 10000
#endif

/// Most fields and enum values, in total, one schema may declare.
#ifndef COVENANT_SCHEMA_MAX_FIELDS
#define COVENANT_SCHEMA_MAX_FIELDS 100000
#endif
