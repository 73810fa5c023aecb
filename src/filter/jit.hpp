// filter/jit.hpp — compiles a verified program to x86-64 with asmjit. Every
// stack slot is a virtual register (one general purpose register per int
// depth, one xmm per float depth) that asmjit's register allocator maps to
// machine registers, spilling only for deep stacks. str_match calls
// tracery_filter_str_match() (glob.hpp); everything else runs inline.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "filter/bytecode.hpp"
#include "filter/glob.hpp"
#include "filter/verifier.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

// Non-zero: accept. ctx may be null unless the program uses the context.
using FilterFn = int (*)(const tracery_arg *args, const Context *ctx);

// How the compiled code receives the event's fields.
enum class CallForm {
	args,   // FilterFn: the argument array (and the context)
	params, // int(field values...): one C parameter per field, of the field's own type, as the emitter of an
		// all-scalar event (TRACERY_GATE_PARAMS) passes them; the program must not use the context
};

// True if `desc` can be compiled in CallForm::params: every field a scalar (integer, float, bool, enum).
bool params_form_possible(const tracery_event_desc &desc);

// The one lock of all code generation in the process: held around every use of
// an asmjit runtime (adding and releasing code) and every cache of generated
// code (gate.cpp, src/ust/payload_writer.cpp). The fork handlers hold it
// across fork() (lock_for_fork, src/ust/registry.cpp), so a child never
// inherits it, nor asmjit's own allocator lock, taken by a thread it lacks.
// Jit::compile and ~Jit take it themselves: never call them with it held.
std::mutex &codegen_mutex();

class Jit {
public:
	// nullptr (and the reason in *why) if asmjit fails; the caller then
	// interprets the program. The program must have passed verify(desc);
	// CallForm::params also needs params_form_possible(desc) and a program
	// that reads no context (else nullptr).
	static std::unique_ptr<Jit> compile(const Program &program, const tracery_event_desc &desc,
	                                    const VerifiedInfo &info, std::string *why, CallForm form = CallForm::args);

	Jit(const Jit &) = delete;
	Jit &operator=(const Jit &) = delete;
	~Jit(); // releases the code

	// The code, to be called as `form` says (cast it for CallForm::params).
	FilterFn fn() const { return fn_; }

private:
	Jit() = default;

	FilterFn fn_ = nullptr;
	std::vector<std::string> strings_; // the literals specs_ point into
	std::vector<StrMatchSpec> specs_;  // one per str_match; the code points at them
};

} // namespace tracery::filter
