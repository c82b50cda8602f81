// StrPrintf: printf into a std::string, for reports and tables whose
// formats are printf's (widths, precisions) — checked by the compiler.
#pragma once

#include <string>

namespace shoal {

std::string StrPrintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace shoal
