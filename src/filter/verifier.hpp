// filter/verifier.hpp — checks a bytecode program (which may come from
// another process) against the event descriptor it will run on, so that the
// interpreter and the JIT can run it without any check of their own.
#pragma once

#include <cstdint>
#include <string>

#include "filter/bytecode.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

struct VerifiedInfo {
	uint32_t max_stack; // deepest stack the program reaches
	bool uses_context;  // has a load_context
	bool uses_procname; // has a str_match on the process name
};

// True if `program` is well formed for `desc` (see bytecode.hpp); fills
// *info. Otherwise false and, if why is set, the reason, naming the
// instruction: "insn 7 (add): needs two ints, stack has float, int".
bool verify(const Program &program, const tracery_event_desc &desc, VerifiedInfo *info, std::string *why);

// The scalar type load_field must name for field f (ENUM: its elem_type), or
// -1 if load_field cannot read f.
int load_field_type(const tracery_field_desc &f);

// True for a float slot type (FLOAT, DOUBLE), false for the integer ones.
inline bool is_float_type(unsigned type) { return type == TRACERY_TYPE_FLOAT || type == TRACERY_TYPE_DOUBLE; }

} // namespace tracery::filter
