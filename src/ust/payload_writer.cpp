// Per-layout payload writers generated with asmjit. See payload_writer.hpp.
#include "ust/payload_writer.hpp"

#include "base/diagnostics.hpp"
#include "event/payload.hpp"
#include "filter/jit.hpp"

#include <asmjit/x86.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace tracery::ust {

namespace {

using namespace asmjit;

// Bytes of each field's value, 'b' for a bool (normalised to 0 or 1, as
// detail::write_bool does): the key under which writers are shared. Empty if
// the layout has a field that is not a scalar.
std::string shape_of(const tracery_event_desc &desc)
{
	if (event::event_desc_error(desc) || desc.nr_fields == 0 || desc.nr_fields > kMaxWriterFields)
		return {};
	std::string shape;
	for (uint32_t i = 0; i < desc.nr_fields; ++i) {
		const tracery_field_desc &f = desc.fields[i];
		const unsigned type = f.type == TRACERY_TYPE_ENUM ? f.elem_type : f.type;
		const size_t size = event::scalar_size(type);
		if (size == 0)
			return {};
		shape.push_back(type == TRACERY_TYPE_BOOL ? 'b' : static_cast<char>('0' + size));
	}
	return shape;
}

// System V x86-64: rdi = dst, rsi = args. rax holds each argument's pointer,
// rcx its value; nothing callee-saved is touched, so no frame.
PayloadWriter generate(JitRuntime &rt, const std::string &shape)
{
	static_assert(offsetof(tracery_arg, ptr) == 0);
	constexpr int32_t kArgSize = int32_t(sizeof(tracery_arg));
	CodeHolder code;
	if (code.init(rt.environment()) != kErrorOk)
		return nullptr;
	x86::Assembler a(&code);
	int32_t off = 0;
	for (size_t i = 0; i < shape.size(); ++i) {
		a.mov(x86::rax, x86::qword_ptr(x86::rsi, int32_t(i) * kArgSize));
		switch (shape[i]) {
		case 'b':
			a.cmp(x86::byte_ptr(x86::rax), 0);
			a.setne(x86::cl);
			a.mov(x86::byte_ptr(x86::rdi, off), x86::cl);
			off += 1;
			break;
		default: {
			// '1', '2', '4', '8': that many bytes, loaded zero-extended below 4
			// so that the load does not depend on rcx's previous value.
			const uint32_t width = uint32_t(shape[i] - '0');
			const x86::Gp value = width == 8   ? x86::Gp(x86::rcx)
			                      : width == 4 ? x86::Gp(x86::ecx)
			                      : width == 2 ? x86::Gp(x86::cx)
			                                   : x86::Gp(x86::cl);
			if (width < 4)
				a.movzx(x86::ecx, x86::ptr(x86::rax, 0, width));
			else
				a.mov(value, x86::ptr(x86::rax, 0, width));
			a.mov(x86::ptr(x86::rdi, off, width), value);
			off += int32_t(width);
			break;
		}
		}
	}
	a.ret();
	PayloadWriter fn = nullptr;
	if (rt.add(&fn, &code) != kErrorOk)
		return nullptr;
	return fn;
}

bool disabled_by_environment()
{
	const char *v = std::getenv("TRACERY_PAYLOAD_JIT");
	if (!v)
		return false;
	const std::optional<bool> on = parse_payload_jit(v);
	if (!on)
		base::diagnostic("TRACERY_PAYLOAD_JIT='%s' is not valid: %s; using the generated code", v,
		                 kPayloadJitValues);
	return on && !*on;
}

} // namespace

std::optional<bool> parse_payload_jit(std::string_view value)
{
	if (value == "1")
		return true;
	if (value == "0")
		return false;
	return std::nullopt;
}

PayloadWriter payload_writer_for(const tracery_event_desc &desc)
{
#if defined(__x86_64__) && !defined(__BIG_ENDIAN__)
	static const bool disabled = disabled_by_environment();
	if (disabled)
		return nullptr;
	const std::string shape = shape_of(desc);
	if (shape.empty())
		return nullptr;
	// Never destroyed: writers stay valid until the process exits. Guarded,
	// like all code generation, by the filter library's codegen lock.
	static auto *writers = new std::map<std::string, PayloadWriter>;
	static JitRuntime *rt = new JitRuntime;
	std::lock_guard lock(filter::codegen_mutex());
	auto [it, added] = writers->try_emplace(shape, nullptr);
	if (added)
		it->second = generate(*rt, shape);
	return it->second;
#else
	(void)desc;
	return nullptr;
#endif
}

} // namespace tracery::ust
