// filter/interpreter.hpp — the reference semantics of the filter bytecode
// (bytecode.hpp): a switch over the instructions with the stack in a local
// array. No allocation, no check: the program must have passed verify() for
// the event whose args it gets.
#pragma once

#include "filter/bytecode.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

// True if the program accepts the event. desc is the descriptor the program
// was verified against (load_element reads an ARRAY and a SEQUENCE field
// differently); ctx may be null unless the verifier said the program uses
// the context or the procname.
bool interpret(const Program &program, const tracery_event_desc &desc, const tracery_arg *args,
               const Context *ctx) noexcept;

} // namespace tracery::filter
