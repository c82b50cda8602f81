# Turns a text file into a C++ header holding it as one string, so that a
# binary carries what it serves (the gateway's dashboard page) and never
# looks for a file at run time.
#
#   cmake -DINPUT=<file> -DOUTPUT=<header> -DNAME=<identifier> -DNAMESPACE=<ns> -P embed_text.cmake
#
# The header defines `inline constexpr std::string_view NAME` in NAMESPACE,
# as a raw string literal. It is rewritten only when its text changes, so an
# unchanged input rebuilds nothing.
foreach(var INPUT OUTPUT NAME NAMESPACE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}=... is required")
  endif()
endforeach()

file(READ "${INPUT}" content)
set(delimiter "shoal_embed")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains ')${delimiter}\"', which would end the raw string early")
endif()

set(header "// Generated from ${INPUT} by cmake/embed_text.cmake: edit that file, not this one.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

inline constexpr std::string_view ${NAME} = R\"${delimiter}(${content})${delimiter}\";

}  // namespace ${NAMESPACE}
")
file(WRITE "${OUTPUT}.tmp" "${header}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
