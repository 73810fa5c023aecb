// kernel/bpf/tracepoint_link.hpp — a program of a loaded BPF object attached
// to a tracepoint with its cookie, as every program of bpf/ is attached.
#pragma once

#include <cstdint>
#include <string>

struct bpf_link;
struct bpf_object;

namespace tracery::kernel {

// The program named `program` of `object` attached to SYSTEM:TRACEPOINT,
// `cookie` what its bpf_get_attach_cookie() returns; the caller destroys the
// link. Throws std::runtime_error naming the tracepoint and the errno (an
// unknown program is ENOENT).
bpf_link *attach_tracepoint(bpf_object *object, const char *program, const char *system, const std::string &tracepoint,
                            uint64_t cookie);

} // namespace tracery::kernel
