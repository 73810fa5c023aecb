// filter/gate.cpp — the process-lifetime table of gate code (gate.hpp).
#include "filter/gate.hpp"

#include "filter/jit.hpp"
#include "filter/verifier.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tracery::filter {

namespace {

// What the compiled code depends on: the program, the call form and the field
// types (the JIT'd code reads arguments by field index and type, never the
// descriptor).
std::string gate_key(const Program &program, const tracery_event_desc &desc)
{
	std::string key = encode(program);
	key.push_back('\0');
	key += std::to_string(desc.gate_call) + ';';
	for (uint32_t i = 0; i < desc.nr_fields; i++) {
		const tracery_field_desc &f = desc.fields[i];
		key += std::to_string(f.type) + '.' + std::to_string(f.elem_type) + '.' + std::to_string(f.length) +
		       ';';
	}
	return key;
}

// CallForm::args takes (args, const Context *): the emitter passes NULL, which
// nothing here reads.
tracery_gate_fn as_gate(const Jit &jit) { return reinterpret_cast<tracery_gate_fn>(jit.fn()); }

} // namespace

tracery_gate_fn gate_for(const Program &program, const tracery_event_desc &desc)
{
	// Never destroyed: emitters may run gates until the process is gone.
	// Guarded by codegen_mutex().
	static auto *gates = new std::map<std::string, std::unique_ptr<Jit>>;
	if (desc.gate_call != TRACERY_GATE_ARGS && desc.gate_call != TRACERY_GATE_PARAMS)
		return nullptr;
	const CallForm form = desc.gate_call == TRACERY_GATE_PARAMS ? CallForm::params : CallForm::args;
	VerifiedInfo info;
	std::string why;
	if (!verify(program, desc, &info, &why) || info.uses_context || info.uses_procname)
		return nullptr;
	if (form == CallForm::params && !params_form_possible(desc))
		return nullptr;
	const std::string key = gate_key(program, desc);
	{
		std::lock_guard lock(codegen_mutex());
		if (auto it = gates->find(key); it != gates->end())
			return as_gate(*it->second);
	}
	// Compiled without the lock (compile takes it to install the code). A
	// thread that compiled the same gate meanwhile wins; ours is released
	// after the lock is dropped (jit outlives the guard below).
	std::unique_ptr<Jit> jit = Jit::compile(program, desc, info, &why, form);
	if (!jit)
		return nullptr;
	std::lock_guard lock(codegen_mutex());
	auto &cached = (*gates)[key];
	if (!cached)
		cached = std::move(jit);
	return as_gate(*cached);
}

} // namespace tracery::filter
