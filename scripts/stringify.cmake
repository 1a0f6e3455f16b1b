# cmake -DIN=file -DOUT=header -DNAME=symbol -P stringify.cmake
# Turns a device source file into a C++ header holding it as a string constant.
file(READ "${IN}" content)
set(delim "aotc_src")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by scripts/stringify.cmake. Do not edit.\n#pragma once\nnamespace aotc {\ninline constexpr const char* ${NAME} = R\"${delim}(${content})${delim}\";\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
