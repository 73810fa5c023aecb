// filter/jit.hpp — compiles a verified program to x86-64 with asmjit. Every
// stack slot is a virtual register (one general purpose register per int
// depth, one xmm per float depth) that asmjit's register allocator maps to
// machine registers, spilling only for deep stacks. str_match calls
// tracery_filter_str_match() (glob.hpp); everything else runs inline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filter/bytecode.hpp"
#include "filter/glob.hpp"
#include "filter/verifier.hpp"
#include "tracery/tracepoint.h"

namespace tracery::filter {

// Non-zero: accept. ctx may be null unless the program uses the context.
using FilterFn = int (*)(const tracery_arg *args, const Context *ctx);

class Jit {
public:
	// nullptr (and the reason in *why) if asmjit fails; the caller then
	// interprets the program. The program must have passed verify(desc).
	static std::unique_ptr<Jit> compile(const Program &program, const tracery_event_desc &desc,
	                                    const VerifiedInfo &info, std::string *why);

	Jit(const Jit &) = delete;
	Jit &operator=(const Jit &) = delete;
	~Jit(); // releases the code

	FilterFn fn() const { return fn_; }

private:
	Jit() = default;

	FilterFn fn_ = nullptr;
	std::vector<std::string> strings_;    // the literals specs_ point into
	std::vector<StrMatchSpec> specs_;     // one per str_match; the code points at them
};

} // namespace tracery::filter
