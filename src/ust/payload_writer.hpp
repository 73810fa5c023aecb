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
#include <optional>
#include <string_view>

#include "tracery/internal/event_desc.h"

namespace tracery::ust {

// Writes the payload of an all-scalar event at dst (its fixed size in bytes).
using PayloadWriter = void (*)(uint8_t *dst, const tracery_arg *args);

// The writer for desc's layout, or nullptr (then use EventLayout::write_payload):
// a field that is not a scalar, no field or more than kMaxWriterFields, a
// malformed descriptor, TRACERY_PAYLOAD_JIT=0 in the environment, or no code
// could be generated. Thread-safe. Another value of TRACERY_PAYLOAD_JIT than
// parse_payload_jit() accepts is reported (base::diagnostic, one line, at the
// first call) and leaves the writers on; daemonless mode refuses it before (the run
// is not traced).
PayloadWriter payload_writer_for(const tracery_event_desc &desc);

// The value of TRACERY_PAYLOAD_JIT: "1", the generated writers (also when the
// variable is unset), or "0", the generic loop; nothing for any other value.
std::optional<bool> parse_payload_jit(std::string_view value);
// The fix for any other value, for messages.
inline constexpr const char *kPayloadJitValues =
	"use 0 (the generic loop) or 1 (code generated per layout, the default)";

inline constexpr uint32_t kMaxWriterFields = 64;

} // namespace tracery::ust
