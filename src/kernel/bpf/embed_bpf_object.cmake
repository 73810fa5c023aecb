# Writes OUTPUT, a C++ source defining NAME[] and NAME_size with the bytes of
# INPUT (a compiled BPF object), for libbpf's bpf_object__open_mem.
# cmake -DINPUT=... -DOUTPUT=... -DNAME=... -P embed_bpf_object.cmake
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by embed_bpf_object.cmake.\n#include <cstddef>\n"
  "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_size;\n"
  "alignas(8) const unsigned char ${NAME}[] = {\n${bytes}\n};\nconst size_t ${NAME}_size = sizeof ${NAME};\n")
