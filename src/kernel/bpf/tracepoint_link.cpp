// kernel/bpf/tracepoint_link.cpp — see tracepoint_link.hpp.
#include "kernel/bpf/tracepoint_link.hpp"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tracery::kernel {

bpf_link *attach_tracepoint(bpf_object *object, const char *program, const char *system, const std::string &tracepoint,
                            uint64_t cookie)
{
	bpf_program *prog = bpf_object__find_program_by_name(object, program);
	bpf_tracepoint_opts opts{};
	opts.sz = sizeof opts;
	opts.bpf_cookie = cookie;
	errno = ENOENT;
	bpf_link *link = prog ? bpf_program__attach_tracepoint_opts(prog, system, tracepoint.c_str(), &opts) : nullptr;
	if (!link)
		throw std::runtime_error(std::string("BPF: cannot attach to ") + system + ":" + tracepoint + ": " +
		                         std::strerror(errno));
	return link;
}

} // namespace tracery::kernel
