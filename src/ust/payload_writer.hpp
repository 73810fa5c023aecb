// Payload writers specialised per event layout. For an event whose fields are
// all scalars (integers, floats, bools, enums), payload_writer_for() returns
// straight-line x86-64 code, generated with asmjit, that copies each argument
// into the record: one load of the argument's pointer, one load and one store
// of its value per field, where event::EventLayout::write_payload walks a table
// of field kinds (the same bytes: event_payload.hpp defines the layout).
// Writers are shared by every event of the same field sizes and never freed,
// as an emitting thread may still run one after its session is gone.
#pragma once

#include <cstdint>

#include "tracery/internal/event_desc.h"

namespace tracery::ust {

// Writes the payload of an all-scalar event at dst (its fixed size in bytes).
using PayloadWriter = void (*)(uint8_t *dst, const tracery_arg *args);

// The writer for desc's layout, or nullptr (then use EventLayout::write_payload):
// a field that is not a scalar, no field or more than kMaxWriterFields, a
// malformed descriptor, TRACERY_PAYLOAD_JIT=0 in the environment, or no code
// could be generated. Thread-safe.
PayloadWriter payload_writer_for(const tracery_event_desc &desc);

inline constexpr uint32_t kMaxWriterFields = 64;

} // namespace tracery::ust
