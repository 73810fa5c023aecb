// analysis/view/text_view.cpp — babeltrace2's text format over the reader's merged
// items (see text_view.hpp).
#include "analysis/view/text_view.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "analysis/read/progress.hpp"
#include "analysis/view/view_filter.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"
#include "filter/glob.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Op;
using reader::OpKind;
using reader::Plan;
using reader::Value;

namespace {

constexpr int64_t kNsPerS = 1000000000;

// memcpy for the short pieces of a line (names, digits), inline: overlapping
// word copies instead of a call.
inline void copy_short(char *d, const char *s, size_t n)
{
	if (n >= 8) {
		if (n > 16) {
			std::memcpy(d, s, n);
			return;
		}
		uint64_t a, b;
		std::memcpy(&a, s, 8);
		std::memcpy(&b, s + n - 8, 8);
		std::memcpy(d, &a, 8);
		std::memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		std::memcpy(&a, s, 4);
		std::memcpy(&b, s + n - 4, 4);
		std::memcpy(d, &a, 4);
		std::memcpy(d + n - 4, &b, 4);
	} else {
		for (size_t i = 0; i < n; ++i)
			d[i] = s[i];
	}
}

// A growable byte buffer written through a pointer: the printer reserves
// room, then stores bytes without further checks.
class Buf {
public:
	Buf() { grow(kInitial); }
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;

	char *data() const { return b_.get(); }
	size_t size() const { return static_cast<size_t>(p_ - b_.get()); }
	void clear() { p_ = b_.get(); }
	// Room for n more bytes.
	void reserve(size_t n)
	{
		if (static_cast<size_t>(e_ - p_) < n)
			grow(size() + n);
	}
	void put(char c)
	{
		reserve(1);
		*p_++ = c;
	}
	void put(const char *s, size_t n)
	{
		reserve(n);
		copy_short(p_, s, n);
		p_ += n;
	}
	void put(std::string_view s) { put(s.data(), s.size()); }
	template <size_t N>
	void lit(const char (&s)[N]) // a string literal
	{
		put(s, N - 1);
	}
	void swap(Buf &other) noexcept
	{
		std::swap(b_, other.b_);
		std::swap(p_, other.p_);
		std::swap(e_, other.e_);
	}
	// After reserve(): direct stores.
	char *&ptr() { return p_; }

private:
	static constexpr size_t kInitial = size_t{1} << 12;
	void grow(size_t want)
	{
		const size_t used = b_ ? size() : 0;
		size_t cap = std::max<size_t>(kInitial, static_cast<size_t>(e_ - b_.get()));
		while (cap < want)
			cap *= 2;
		auto nb = std::make_unique_for_overwrite<char[]>(cap);
		if (used)
			std::memcpy(nb.get(), b_.get(), used);
		b_ = std::move(nb);
		p_ = b_.get() + used;
		e_ = b_.get() + cap;
	}
	std::unique_ptr<char[]> b_;
	char *p_ = nullptr, *e_ = nullptr;
};

// The output: Bufs of about 1 MiB written with write(2) by a thread of its
// own, while the next one fills (copying into the page cache then overlaps
// the formatting); EPIPE ends the output quietly, another error is thrown
// by the next flush.
class Out {
public:
	explicit Out(int fd) : fd_(fd)
	{
		front_.reserve(kFlushAt + 4096);
		back_.reserve(kFlushAt + 4096);
	}
	~Out()
	{
		if (!writer_.joinable())
			return;
		{
			std::unique_lock lock(mu_);
			idle_.wait(lock, [&] { return !busy_; });
			stop_ = true;
		}
		work_.notify_one();
		writer_.join();
	}
	Out(const Out &) = delete;
	Out &operator=(const Out &) = delete;

	Buf &buf() { return front_; }
	bool closed() const { return closed_.load(std::memory_order_relaxed); }
	void maybe_flush()
	{
		if (front_.size() >= kFlushAt)
			hand_off();
	}
	// Everything so far written (before a line on stderr, and at the end).
	void flush()
	{
		hand_off();
		std::unique_lock lock(mu_);
		idle_.wait(lock, [&] { return !busy_; });
		throw_error();
	}

private:
	static constexpr size_t kFlushAt = size_t{1} << 20;

	// The front buffer to the writer (once it is done with the other).
	void hand_off()
	{
		if (front_.size() == 0)
			return;
		if (!writer_.joinable())
			writer_ = std::thread([this] { write_loop(); });
		{
			std::unique_lock lock(mu_);
			idle_.wait(lock, [&] { return !busy_; });
			throw_error();
			front_.swap(back_);
			busy_ = true;
		}
		work_.notify_one();
		front_.clear();
	}
	void throw_error() const
	{
		if (error_)
			throw std::runtime_error(std::string("cannot write the output: ") + strerror(error_));
	}

	void write_loop()
	{
		std::unique_lock lock(mu_);
		while (true) {
			work_.wait(lock, [&] { return busy_ || stop_; });
			if (!busy_)
				return;
			lock.unlock();
			const int error = write_all(back_);
			lock.lock();
			if (error)
				error_ = error;
			busy_ = false;
			idle_.notify_one();
		}
	}
	int write_all(const Buf &b)
	{
		size_t done = 0;
		while (!closed() && done < b.size()) {
			const ssize_t n = ::write(fd_, b.data() + done, b.size() - done);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EPIPE) {
					closed_.store(true, std::memory_order_relaxed);
					break;
				}
				return errno;
			}
			done += static_cast<size_t>(n);
		}
		return 0;
	}

	int fd_;
	Buf front_, back_; // the printer fills front_; the writer writes back_ while busy_
	std::atomic<bool> closed_{false};
	std::mutex mu_;
	std::condition_variable work_, idle_;
	bool busy_ = false, stop_ = false;
	int error_ = 0;
	std::thread writer_;
};

constexpr char kDigitPairs[] = "00010203040506070809"
			       "10111213141516171819"
			       "20212223242526272829"
			       "30313233343536373839"
			       "40414243444546474849"
			       "50515253545556575859"
			       "60616263646566676869"
			       "70717273747576777879"
			       "80818283848586878889"
			       "90919293949596979899";

// Decimal digits of v, at most 20, stored ending at end; returns their start.
inline char *digits_before(char *end, uint64_t v)
{
	while (v >= 100) {
		const auto r = static_cast<size_t>(v % 100) * 2;
		v /= 100;
		*--end = kDigitPairs[r + 1];
		*--end = kDigitPairs[r];
	}
	if (v >= 10) {
		const auto r = static_cast<size_t>(v) * 2;
		*--end = kDigitPairs[r + 1];
		*--end = kDigitPairs[r];
	} else {
		*--end = static_cast<char>('0' + v);
	}
	return end;
}

// "000" to "999", 4 bytes each (the 4th unused): three digits in one load.
struct DigitTriples {
	char t[1000][4];
	constexpr DigitTriples() : t()
	{
		for (int i = 0; i < 1000; ++i) {
			t[i][0] = static_cast<char>('0' + i / 100);
			t[i][1] = static_cast<char>('0' + i / 10 % 10);
			t[i][2] = static_cast<char>('0' + i % 10);
		}
	}
};
constexpr DigitTriples kDigitTriples;

// Stores v (< 10^9) as exactly 9 digits at p (3 independent thirds).
inline char *nine_digits(char *p, uint32_t v)
{
	const uint32_t high = v / 1000000, rest = v % 1000000;
	std::memcpy(p, kDigitTriples.t[high], 3);
	std::memcpy(p + 3, kDigitTriples.t[rest / 1000], 3);
	std::memcpy(p + 6, kDigitTriples.t[rest % 1000], 3);
	return p + 9;
}

// How many decimal digits v has.
inline unsigned decimal_digits(uint64_t v)
{
	static constexpr uint64_t kPowers[] = {0,
	                                       10,
	                                       100,
	                                       1000,
	                                       10000,
	                                       100000,
	                                       1000000,
	                                       10000000,
	                                       100000000,
	                                       1000000000,
	                                       10000000000,
	                                       100000000000,
	                                       1000000000000,
	                                       10000000000000,
	                                       100000000000000,
	                                       1000000000000000,
	                                       10000000000000000,
	                                       100000000000000000,
	                                       1000000000000000000,
	                                       10000000000000000000u};
	// log10 from log2, corrected by one comparison
	const unsigned guess = (64 - static_cast<unsigned>(__builtin_clzll(v | 1))) * 1233 >> 12;
	return guess + (v >= kPowers[guess]);
}

// Stores v (< 10^8) as exactly 8 digits at p (two independent halves).
inline char *eight_digits(char *p, uint32_t v)
{
	const uint32_t high = v / 10000, low = v % 10000;
	std::memcpy(p, kDigitPairs + 2 * (high / 100), 2);
	std::memcpy(p + 2, kDigitPairs + 2 * (high % 100), 2);
	std::memcpy(p + 4, kDigitPairs + 2 * (low / 100), 2);
	std::memcpy(p + 6, kDigitPairs + 2 * (low % 100), 2);
	return p + 8;
}

// Stores the decimal digits of v at p (room for 20); returns their end.
// Beyond 8 digits, the low ones 8 at a time (an address: 15 digits).
inline char *put_u64(char *p, uint64_t v)
{
	constexpr uint64_t k8 = 100000000;
	if (v >= k8) {
		uint64_t high = v / k8;
		const auto low = static_cast<uint32_t>(v % k8);
		if (high >= k8) {
			p = put_u64(p, high / k8);
			p = eight_digits(p, static_cast<uint32_t>(high % k8));
		} else {
			const unsigned n = decimal_digits(high);
			digits_before(p + n, high);
			p += n;
		}
		return eight_digits(p, low);
	}
	const unsigned n = decimal_digits(v);
	digits_before(p + n, v);
	return p + n;
}

// v, after a '-' when negative (room for 21).
inline char *put_i64(char *p, int64_t v)
{
	if (v >= 0)
		return put_u64(p, static_cast<uint64_t>(v));
	*p = '-';
	return put_u64(p + 1, 0 - static_cast<uint64_t>(v));
}

inline void append_u64(Buf &o, uint64_t v)
{
	o.reserve(20);
	o.ptr() = put_u64(o.ptr(), v);
}
inline void append_i64(Buf &o, int64_t v)
{
	o.reserve(21);
	o.ptr() = put_i64(o.ptr(), v);
}
void append_u64(std::string &o, uint64_t v)
{
	char b[24];
	char *s = digits_before(b + sizeof b, v);
	o.append(s, b + sizeof b);
}

#if !defined(__SSE2__)
// The bytes babeltrace2 escapes in strings.
struct EscapedBytes {
	bool t[256];
	constexpr EscapedBytes() : t()
	{
		for (int c = 0; c < 256; ++c)
			t[c] = c < 0x20 || c == 0x7f || c == '\\' || c == '\'' || c == '"' || c == '?';
	}
};
constexpr EscapedBytes kEscaped;
#endif

// The index of the first byte of s[0, n) that babeltrace2 escapes, n if
// none: sixteen bytes at a time where SSE2 is (the last few copied into a
// block of sixteen: nothing past s + n is read).
inline size_t first_escaped(const char *s, size_t n)
{
#if defined(__SSE2__)
	for (size_t i = 0;; i += 16) {
		const size_t left = n - i;
		__m128i v;
		if (left >= 16) {
			v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
		} else {
			if (left == 0)
				return n;
			char b[16] = {};
			copy_short(b, s + i, left);
			v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b));
		}
		const auto eq = [&](char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
		const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v); // (bytes below 0x20)
		const __m128i any =
			_mm_or_si128(_mm_or_si128(_mm_or_si128(control, eq(0x7f)), _mm_or_si128(eq('\\'), eq('\''))),
		                     _mm_or_si128(eq('"'), eq('?')));
		auto mask = static_cast<unsigned>(_mm_movemask_epi8(any));
		if (left < 16)
			mask &= (1u << left) - 1;
		if (mask)
			return i + static_cast<size_t>(__builtin_ctz(mask));
		if (left <= 16)
			return n;
	}
#else
	size_t j = 0;
	while (j < n && !kEscaped.t[static_cast<unsigned char>(s[j])])
		++j;
	return j;
#endif
}

// babeltrace2's string escapes.
void append_escaped(Buf &o, const char *s, size_t n)
{
	o.reserve(4 * n + 2); // the longest escape (\xNN) is 4 bytes
	char *p = o.ptr();
	*p++ = '"';
	for (size_t i = 0; i < n; ++i) {
		// the run of bytes shown as they are, copied at once
		const size_t j = i + first_escaped(s + i, n - i);
		copy_short(p, s + i, j - i);
		p += j - i;
		if (j == n)
			break;
		i = j;
		const auto c = static_cast<unsigned char>(s[i]);
		char e = 0;
		switch (c) {
		case '\\':
		case '\'':
		case '"':
		case '?':
			e = static_cast<char>(c);
			break;
		case '\a':
			e = 'a';
			break;
		case '\b':
			e = 'b';
			break;
		case 0x1b:
			e = 'e';
			break;
		case '\f':
			e = 'f';
			break;
		case '\n':
			e = 'n';
			break;
		case '\r':
			e = 'r';
			break;
		case '\t':
			e = 't';
			break;
		case '\v':
			e = 'v';
			break;
		default:
			break;
		}
		*p++ = '\\';
		if (e) {
			*p++ = e;
		} else {
			static constexpr char kHex[] = "0123456789abcdef";
			*p++ = 'x';
			*p++ = kHex[c >> 4];
			*p++ = kHex[c & 15];
		}
	}
	*p++ = '"';
	o.ptr() = p;
}

uint64_t low_bits(uint64_t v, unsigned bits) { return bits < 64 ? v & ((uint64_t{1} << bits) - 1) : v; }

// One shown member of a direct scope (below): the text before its value,
// where its value is, how it prints.
struct Piece {
	std::string before;
	uint32_t value; // its op's index, and its value's (one value per member)
	enum Kind : uint8_t { udec, sdec, string, other } kind; // (udec, sdec: decimal integers, not enumerations)
};

// How one scope of an event class prints: directly from its pieces and the
// text after them (end), or (not direct) by structure() with `before`.
struct ScopeProgram {
	const Plan *plan = nullptr;
	std::span<const reader::Value> reader::Item::*values = nullptr;
	bool direct = false;
	std::vector<Piece> pieces;
	std::string before, end;
};

// The line of an event class after its time: its name, then (after the
// packet context) its scopes, then `end`.
struct EventProgram {
	bool made = false;
	std::string name; // "host name: "
	std::vector<ScopeProgram> scopes;
	std::string end;
};

class Printer {
public:
	Printer(Buf &o, const ViewOptions &opt) : o_(o), opt_(opt), all_fields_(opt.fields.empty()) {}

	// HH:MM:SS.nnnnnnnnn in local time (seconds.ns before the epoch).
	void time(int64_t ns)
	{
		int64_t s = ns / kNsPerS, sub = ns % kNsPerS;
		if (ns < 0) {
			// babeltrace2 warns once and prints -S.N
			if (!warned_negative_) {
				fprintf(stderr,
				        "[warning] Fallback to [sec.ns] to print negative time value. Use --clock-seconds.\n");
				warned_negative_ = true;
			}
			const uint64_t a = static_cast<uint64_t>(-(ns + 1)) + 1;
			o_.put('-');
			append_u64(o_, a / kNsPerS);
			o_.reserve(10);
			*o_.ptr()++ = '.';
			o_.ptr() = nine_digits(o_.ptr(), static_cast<uint32_t>(a % kNsPerS));
			return;
		}
		if (s != cached_s_) {
			const auto t = static_cast<time_t>(s);
			struct tm tm;
			if (!localtime_r(&t, &tm)) {
				append_u64(o_, static_cast<uint64_t>(s));
				o_.reserve(10);
				*o_.ptr()++ = '.';
				o_.ptr() = nine_digits(o_.ptr(), static_cast<uint32_t>(sub));
				return;
			}
			char b[16];
			snprintf(b, sizeof b, "%02d:%02d:%02d.", tm.tm_hour, tm.tm_min, tm.tm_sec);
			std::memcpy(cached_hms_, b, sizeof cached_hms_); // tm's fields are in range: 9 bytes
			cached_s_ = s;
		}
		o_.reserve(sizeof cached_hms_ + 9);
		char *p = o_.ptr();
		std::memcpy(p, cached_hms_, sizeof cached_hms_);
		o_.ptr() = nine_digits(p + sizeof cached_hms_, static_cast<uint32_t>(sub));
	}

	void integer(const Op &op, uint64_t raw)
	{
		const reader::FieldType &t = *op.type;
		switch (t.base) {
		case reader::Base::dec:
			if (t.is_signed)
				append_i64(o_, static_cast<int64_t>(raw));
			else
				append_u64(o_, raw);
			break;
		case reader::Base::hex: {
			// the value's bits rounded up to whole hex digits
			const uint64_t v = low_bits(raw, (t.size + 3) & ~3u);
			char b[24];
			snprintf(b, sizeof b, "0x%" PRIX64, v);
			o_.put(b, strlen(b));
			break;
		}
		case reader::Base::oct: {
			// a negative value's bits rounded up to whole octal digits
			const uint64_t v = t.is_signed ? low_bits(raw, ((t.size - 1) / 3 + 1) * 3) : raw;
			char b[32];
			snprintf(b, sizeof b, "0%" PRIo64, v);
			o_.put(b, strlen(b));
			break;
		}
		case reader::Base::bin:
			o_.lit("0b");
			o_.reserve(t.size);
			for (unsigned i = t.size; i-- > 0;)
				*o_.ptr()++ = (raw >> i) & 1 ? '1' : '0';
			break;
		}
	}

	// Prints the value of op i at values[v]; returns the next value index.
	size_t field(const Plan &plan, uint32_t i, const Value *values, size_t v)
	{
		const Op &op = plan.ops[i];
		const Value &val = values[v];
		switch (op.kind) {
		case OpKind::u8:
		case OpKind::u16:
		case OpKind::u32:
		case OpKind::u64:
			if (op.type->kind != reader::TypeKind::enumeration && op.type->base == reader::Base::dec) {
				append_u64(o_, val.u); // the common case: unsigned decimal
				return v + 1;
			}
			[[fallthrough]];
		case OpKind::integer:
			if (op.type->kind == reader::TypeKind::enumeration) {
				o_.lit("( ");
				bool any = false;
				reader::for_each_enum_label(*op.type, val.u, [&](const std::string &label) {
					if (any)
						o_.lit(", ");
					append_escaped(o_, label.data(), label.size());
					any = true;
				});
				if (!any)
					o_.lit("<unknown>");
				o_.lit(" : container = ");
				integer(op, val.u);
				o_.lit(" )");
			} else {
				integer(op, val.u);
			}
			return v + 1;
		case OpKind::float32:
		case OpKind::float64: {
			char b[64];
			const int n = snprintf(b, sizeof b, "%g", val.f);
			o_.put(b, static_cast<size_t>(n));
			return v + 1;
		}
		case OpKind::string:
		case OpKind::text_array:
		case OpKind::text_sequence:
			append_escaped(o_, val.s, val.n);
			return v + 1;
		case OpKind::structure:
			return structure(plan, i, values, v, false);
		case OpKind::array:
		case OpKind::sequence: {
			o_.put('[');
			size_t w = v + 1;
			for (uint64_t k = 0; k < val.n; ++k) {
				if (k)
					o_.lit(", [");
				else
					o_.lit(" [");
				append_u64(o_, k);
				o_.lit("] = ");
				w = field(plan, i + 1, values, w);
			}
			o_.lit(" ]");
			return w;
		}
		case OpKind::variant: {
			o_.lit("{ ");
			const size_t w = field(plan, plan.selectors[op.table].option_ops[val.n], values, v + 1);
			o_.lit(" }");
			return w;
		}
		}
		return v + 1;
	}

	bool wanted(std::string_view shown) const
	{
		if (all_fields_)
			return true;
		for (const std::string &f : opt_.fields)
			if (f == shown)
				return true;
		return false;
	}
	static std::string_view shown_name(const std::string &name)
	{
		std::string_view n = name;
		if (!n.empty() && n[0] == '_')
			n.remove_prefix(1);
		return n;
	}

	// "{ a = 1, b = 2 }" of the members shown (at a scope's root, also only
	// those --fields names).
	size_t structure(const Plan &plan, uint32_t i, const Value *values, size_t v, bool root,
	                 std::string_view before = {})
	{
		const Op &op = plan.ops[i];
		o_.put(before);
		o_.put('{');
		size_t w = v + 1;
		uint32_t c = i + 1;
		bool first = true;
		for (uint32_t k = 0; k < op.count; ++k) {
			const Op &m = plan.ops[c];
			const std::string_view name = shown_name(*m.name);
			if (m.shown && (!root || wanted(name))) {
				o_.reserve(name.size() + 5);
				char *p = o_.ptr();
				if (!first)
					*p++ = ',';
				*p++ = ' ';
				copy_short(p, name.data(), name.size());
				p += name.size();
				std::memcpy(p, " = ", 3);
				o_.ptr() = p + 3;
				first = false;
				w = field(plan, c, values, w);
			} else {
				w = reader::skip_values(plan, c, values, w);
			}
			c = m.next;
		}
		o_.lit(" }");
		return w;
	}

	// Whether a scope is shown: babeltrace2 shows a scope with a member it
	// shows, or with no member at all ("{ }"); --fields hides the others.
	bool scope_shows(const Plan &plan) const
	{
		if (plan.empty())
			return false;
		if (plan.ops[0].count == 0)
			return all_fields_;
		uint32_t c = 1;
		for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
			const Op &m = plan.ops[c];
			if (m.shown && wanted(shown_name(*m.name)))
				return true;
			c = m.next;
		}
		return false;
	}

	void event(const reader::Item &it)
	{
		const reader::Stream &s = *it.stream;
		if (s.has_clock()) {
			o_.put('[');
			time(it.ns);
			if (have_last_) {
				const uint64_t d = static_cast<uint64_t>(it.ns) - static_cast<uint64_t>(last_ns_);
				o_.reserve(40);
				char *p = o_.ptr();
				std::memcpy(p, "] (+", 4);
				p += 4;
				if (d < static_cast<uint64_t>(kNsPerS)) {
					*p++ = '0';
				} else {
					char b[24];
					char *q = digits_before(b + sizeof b, d / kNsPerS);
					const auto n = static_cast<size_t>(b + sizeof b - q);
					std::memcpy(p, q, n);
					p += n;
				}
				*p++ = '.';
				p = nine_digits(p, static_cast<uint32_t>(d % kNsPerS));
				*p++ = ')';
				*p++ = ' ';
				o_.ptr() = p;
			} else {
				o_.lit("] (+?.????????"
				       "?) ");
			}
			last_ns_ = it.ns;
			have_last_ = true;
		}
		const EventProgram &prog = head(it);
		for (const ScopeProgram &sp : prog.scopes) {
			const std::span<const Value> values = it.*sp.values;
			if (sp.direct)
				run(sp, values.data());
			else
				structure(*sp.plan, 0, values.data(), 0, true, sp.before);
		}
		o_.put(prog.end);
	}

	// "host name: " of the event's class, then "{ packet context }": the
	// packet context's text is the same for all the events of a packet, made
	// once per packet of each stream; the rest of the line's text once per
	// class and stream (program()). Returns that class's program.
	const EventProgram &head(const reader::Item &it)
	{
		const reader::Stream &s = *it.stream;
		if (streams_.size() <= s.index())
			streams_.resize(s.index() + 1);
		StreamText &st = streams_[s.index()];
		if (st.packet != s.packets_reached()) {
			st.packet = s.packets_reached();
			st.packet_shown = scope_shows(s.plans().packet_context);
			st.packet_text.clear();
			if (st.packet_shown) {
				if (!scratch_)
					scratch_ = std::make_unique<Buf>();
				scratch_->clear();
				Printer(*scratch_, opt_)
					.structure(s.plans().packet_context, 0, it.packet_context.data(), 0, true, {});
				st.packet_text.assign(scratch_->data(), scratch_->size());
			}
		}
		const auto &events = s.plans().events;
		const auto cls = static_cast<size_t>(it.event - events.data());
		if (st.programs.size() != events.size())
			st.programs.resize(events.size());
		EventProgram &prog = st.programs[cls];
		if (!prog.made)
			program(it, st.packet_shown, prog);
		o_.put(prog.name);
		o_.put(st.packet_text);
		return prog;
	}

	// The text of an event class's line after its packet context, made once:
	// "host name: " before, then each scope shown with the separator before
	// it. A root struct whose members are one value each (integers, strings,
	// text, floats) is printed from a list of its shown members with the
	// text before each ("{ a = ", ", b = "), the others by structure().
	void program(const reader::Item &it, bool packet_shown, EventProgram &prog)
	{
		const reader::Stream &s = *it.stream;
		const reader::Trace &t = s.trace();
		if (t.has_hostname) {
			prog.name += t.hostname;
			prog.name += ' ';
		}
		prog.name += it.event->cls->name;
		prog.name += ": ";
		bool start_line = !packet_shown;
		const struct {
			const Plan *plan;
			std::span<const Value> reader::Item::*values;
		} scopes[] = {{&s.plans().event_context, &reader::Item::stream_context},
		              {&it.event->context, &reader::Item::context},
		              {&it.event->fields, &reader::Item::fields}};
		std::string pending; // text not yet given to a piece
		for (const auto &sc : scopes) {
			const Plan &plan = *sc.plan;
			if (!scope_shows(plan))
				continue;
			if (!start_line)
				pending += ", ";
			start_line = false;
			ScopeProgram &sp = prog.scopes.emplace_back();
			sp.plan = &plan;
			sp.values = sc.values;
			const Op &root = plan.ops[0];
			sp.direct = root.next == root.count + 1; // members of one op each
			for (uint32_t k = 0; sp.direct && k < root.count; ++k)
				sp.direct = plan.ops[1 + k].kind <= OpKind::text_sequence;
			if (!sp.direct) {
				sp.before = std::move(pending);
				pending.clear();
				continue;
			}
			pending += '{';
			bool first = true;
			for (uint32_t k = 0; k < root.count; ++k) {
				const Op &m = plan.ops[1 + k];
				const std::string_view name = shown_name(*m.name);
				if (!m.shown || !wanted(name))
					continue;
				pending += first ? " " : ", ";
				pending += name;
				pending += " = ";
				first = false;
				const bool dec =
					m.type->kind == reader::TypeKind::integer && m.type->base == reader::Base::dec;
				const bool udec = dec && m.kind <= OpKind::u64;
				const bool sdec = dec && m.kind == OpKind::integer && m.type->is_signed;
				sp.pieces.push_back({std::move(pending), 1 + k,
				                     udec                       ? Piece::udec
				                     : sdec                     ? Piece::sdec
				                     : m.kind == OpKind::string ? Piece::string
				                                                : Piece::other});
				pending.clear();
			}
			sp.end = std::move(pending) + " }"; // "{" too when no member is shown
			pending.clear();
		}
		// the line's end joins the last scope's text when it is direct
		const bool joined = !prog.scopes.empty() && prog.scopes.back().direct;
		if (joined)
			prog.scopes.back().end.push_back('\n');
		prog.end.assign(joined ? 0 : 1, '\n');
		prog.made = true;
	}

	// A direct scope's program over its values.
	void run(const ScopeProgram &sp, const Value *values)
	{
		for (const Piece &p : sp.pieces) {
			const Value &v = values[p.value];
			if (p.kind == Piece::udec ||
			    p.kind == Piece::sdec) { // (the text before it and it: one reserve)
				const size_t n = p.before.size();
				o_.reserve(n + 21);
				char *q = o_.ptr();
				copy_short(q, p.before.data(), n);
				o_.ptr() = p.kind == Piece::udec ? put_u64(q + n, v.u) : put_i64(q + n, v.i);
				continue;
			}
			o_.put(p.before);
			if (p.kind == Piece::string)
				append_escaped(o_, v.s, v.n);
			else
				field(*sp.plan, p.value, values, p.value);
		}
		o_.put(sp.end);
	}

	void discarded(const reader::Item &it, FILE *err)
	{
		const reader::Stream &s = *it.stream;
		std::string line = "WARNING: Tracer discarded ";
		append_u64(line, it.count);
		line += it.kind == reader::ItemKind::discarded_events ? " event" : " packet";
		if (it.count != 1)
			line += 's';
		line += ' ';
		if (it.has_range) {
			Buf b;
			Printer p(b, opt_);
			p.warned_negative_ = warned_negative_;
			line += "between [";
			p.time(it.ns);
			line.append(b.data(), b.size());
			b.clear();
			line += "] and [";
			p.time(it.end_ns);
			line.append(b.data(), b.size());
			line += ']';
			warned_negative_ = p.warned_negative_;
		} else {
			line += "(unknown time range)";
		}
		const reader::Trace &t = s.trace();
		line += " in trace \"";
		line += t.name;
		line += "\" ";
		if (t.has_uuid) {
			char b[64];
			const uint8_t *u = t.uuid;
			snprintf(b, sizeof b,
			         "(UUID: %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x) ", u[0],
			         u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
			         u[14], u[15]);
			line += b;
		} else {
			line += "(no UUID) ";
		}
		line += "within stream \"";
		line += s.name();
		line += "\" (stream class ID: ";
		append_u64(line, s.class_id());
		line += ", stream ID: ";
		append_u64(line, s.id());
		line += ").\n";
		fwrite(line.data(), 1, line.size(), err);
	}

private:
	struct StreamText {
		uint64_t packet = 0; // Stream::packets_reached() of the packet_text
		bool packet_shown = false;
		std::string packet_text;
		std::vector<EventProgram> programs; // by index in the stream class's events
	};
	Buf &o_;
	const ViewOptions &opt_;
	bool all_fields_;
	int64_t cached_s_ = INT64_MIN;
	char cached_hms_[9] = {}; // "HH:MM:SS." of the second cached_s_
	int64_t last_ns_ = 0;
	bool have_last_ = false;
	bool warned_negative_ = false;
	std::vector<StreamText> streams_;
	std::unique_ptr<Buf> scratch_; // where packet contexts are formatted
};

bool name_wanted(const std::vector<std::string> &globs, const std::string &name)
{
	if (globs.empty())
		return true;
	for (const std::string &g : globs)
		if (filter::glob_match(g.data(), g.size(), name.data(), name.size()))
			return true;
	return false;
}

} // namespace

namespace {

// The ns of the digits after a decimal point (1 to 9 of them, up to end).
std::optional<uint64_t> fraction_ns(const char *f, const char *end)
{
	uint64_t frac = 0;
	int digits = 0;
	for (; f < end && *f >= '0' && *f <= '9' && digits < 9; ++f, ++digits)
		frac = frac * 10 + static_cast<uint64_t>(*f - '0');
	if (f != end || digits == 0)
		return std::nullopt;
	for (; digits < 9; ++digits)
		frac *= 10;
	return frac;
}

} // namespace

std::optional<int64_t> parse_time(const std::string &text, std::optional<int64_t> first_ns)
{
	const char *p = text.c_str();
	const char *end = p + text.size();
	if (text.empty())
		return std::nullopt;
	// plain integer (ns) or seconds with a fraction
	{
		bool neg = *p == '-';
		const char *q = neg ? p + 1 : p;
		uint64_t whole = 0;
		auto r = std::from_chars(q, end, whole);
		if (r.ec == std::errc() && r.ptr == end)
			return neg ? -static_cast<int64_t>(whole) : static_cast<int64_t>(whole);
		if (r.ec == std::errc() && *r.ptr == '.' && text.find(':') == std::string::npos) {
			const auto frac = fraction_ns(r.ptr + 1, end);
			if (!frac)
				return std::nullopt;
			const int64_t v = static_cast<int64_t>(whole) * kNsPerS + static_cast<int64_t>(*frac);
			return neg ? -v : v;
		}
	}
	struct tm tm {};
	int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
	const char *rest = nullptr;
	if (sscanf(p, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) == 6) {
		rest = p + n;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
	} else if (sscanf(p, "%2d:%2d:%2d%n", &h, &mi, &s, &n) == 3) {
		rest = p + n;
		if (!first_ns)
			return std::nullopt;
		const auto t = static_cast<time_t>(*first_ns / kNsPerS);
		if (!localtime_r(&t, &tm))
			return std::nullopt;
	} else {
		return std::nullopt;
	}
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	uint64_t frac = 0;
	if (rest < end) {
		if (*rest != '.')
			return std::nullopt;
		const auto f = fraction_ns(rest + 1, end);
		if (!f)
			return std::nullopt;
		frac = *f;
	}
	const time_t secs = mktime(&tm);
	if (secs == static_cast<time_t>(-1))
		return std::nullopt;
	return static_cast<int64_t>(secs) * kNsPerS + static_cast<int64_t>(frac);
}

ViewStats view_traces(const std::vector<TraceInput> &inputs, const ViewOptions &options, int out_fd, FILE *err)
{
	std::optional<ViewFilter> filter; // a bad expression is said before the traces are read
	if (!options.filter.empty())
		filter.emplace(options.filter);
	reader::TraceSet set;
	for (const TraceInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	if (filter)
		filter->bind(set, [&](const std::string &name) { return name_wanted(options.names, name); });
	set.start();
	Out out(out_fd);
	Printer printer(out.buf(), options);
	ViewStats stats;
	std::optional<int64_t> begin, end;
	bool resolved = options.begin.empty() && options.end.empty();
	// A bar on stderr while the events go to a file or a pipe, not to the terminal it is on.
	Progress progress("view", set.bytes_total(), err,
	                  Progress::on_terminal(err) && !(::isatty(out_fd) && Progress::on_terminal(stdout)));
	uint64_t items = 0;
	// A packet found damaged when reached ends the reading: the events
	// before it are written, then the error (file and offset) is thrown.
	const auto next = [&] {
		try {
			return set.next();
		} catch (const reader::ReadError &) {
			out.flush();
			progress.clear();
			throw;
		}
	};
	while (const reader::Item *it = next()) {
		if ((++items & 0xfff) == 0)
			progress.update(set.bytes_done());
		if (!resolved) {
			const auto bound = [&](const std::string &s, const char *what) -> std::optional<int64_t> {
				if (s.empty())
					return std::nullopt;
				auto v = parse_time(s, it->ns);
				if (!v)
					throw std::invalid_argument(
						std::string("cannot read the ") + what + " time '" + s +
						"': give HH:MM:SS[.NNNNNNNNN], YYYY-MM-DD HH:MM:SS[.N], "
						"SECONDS[.N] from the epoch, or ns from the epoch");
				return v;
			};
			begin = bound(options.begin, "--begin");
			end = bound(options.end, "--end");
			resolved = true;
		}
		if (begin && it->ns < *begin)
			continue;
		if (end && it->ns > *end)
			break;
		if (it->kind != reader::ItemKind::event) {
			out.flush();
			progress.clear();
			printer.discarded(*it, err);
			continue;
		}
		if (!name_wanted(options.names, it->event->cls->name))
			continue;
		if (filter && !filter->accepts(*it))
			continue;
		printer.event(*it);
		++stats.events;
		out.maybe_flush();
		if (out.closed())
			break;
	}
	out.flush();
	progress.finish();
	stats.output_closed = out.closed();
	return stats;
}

struct ItemPrinter::Impl {
	Impl(const ViewOptions &o, int out_fd, FILE *e) : options(o), out(out_fd), printer(out.buf(), options), err(e)
	{
		if (!options.filter.empty())
			filter.emplace(options.filter);
	}
	ViewOptions options;
	Out out;
	Printer printer;
	FILE *err;
	std::optional<ViewFilter> filter;
	uint64_t events = 0;
};

ItemPrinter::ItemPrinter(const ViewOptions &options, int out_fd, FILE *err)
	: impl_(std::make_unique<Impl>(options, out_fd, err))
{
}

ItemPrinter::~ItemPrinter() = default;

void ItemPrinter::bind(const reader::TraceSet &set)
{
	if (impl_->filter)
		impl_->filter->bind(set,
		                    [&](const std::string &name) { return name_wanted(impl_->options.names, name); });
}

bool ItemPrinter::print(const reader::Item &it)
{
	Impl &m = *impl_;
	if (it.kind != reader::ItemKind::event) {
		m.out.flush();
		m.printer.discarded(it, m.err);
	} else if (name_wanted(m.options.names, it.event->cls->name) && (!m.filter || m.filter->accepts(it))) {
		m.printer.event(it);
		++m.events;
		m.out.maybe_flush();
	}
	return !m.out.closed();
}

void ItemPrinter::flush() { impl_->out.flush(); }

uint64_t ItemPrinter::events() const { return impl_->events; }

} // namespace tracery::analysis
