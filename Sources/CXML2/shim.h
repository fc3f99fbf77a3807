#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, so libxml/encoding.h would include the system's ICU
// headers, which clash with the ICU copy inside Swift's Foundation. Only the layout of
// xmlCharEncodingHandler depends on it (two trailing pointers); dray never allocates or
// reads that struct, so the module is imported as if ICU were off.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>

// `xmlFree` is a macro over a global function pointer (libxml/globals.h), which Swift
// cannot call directly; this wrapper frees strings libxml2 hands out.
static inline void dray_xml_free(void *pointer) { xmlFree(pointer); }

// `xmlParserVersion` is a macro over a per-thread global (libxml/globals.h), like xmlFree:
// the running library's version as digits, "20914" for 2.9.14.
static inline const char *dray_xml_parser_version(void) { return xmlParserVersion; }
