// filter/gate.hpp — JIT'd filters that live as long as the process, for use
// as an event's gate (tracepoint.h: the emitter calls the gate before any
// probe, without the RCU read side, so nothing tells the runtime when the
// last thread has left the gate's code: it is never freed).
#pragma once

#include "filter/bytecode.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

// The gate code for `program` on `desc`: JIT-compiled on first use per
// program and field layout, then shared and kept for the life of the process
// (bounded by the distinct filters a process is given). nullptr if the
// program reads context fields or does not verify, or if the JIT fails.
tracery_gate_fn gate_for(const Program &program, const tracery_event_desc &desc);

} // namespace tracery::filter
