/*
 * all-types: emits every field type with edge values (min/max, negative,
 * NaN/inf, empty and non-ASCII strings, empty sequences) for the round-trip
 * test tests/roundtrip_test.py, which holds the same values.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <float.h>
#include <math.h>
#include <stdint.h>

TRACERY_ENUM_LABELS(rt_color, {"red", 0, 0}, {"green", 1, 1}, {"many", 2, 200});

TRACERY_EVENT(rt, ints, TRACERY_S8(s8), TRACERY_S16(s16), TRACERY_S32(s32), TRACERY_S64(s64), TRACERY_U8(u8),
              TRACERY_U16(u16), TRACERY_U32(u32), TRACERY_U64(u64))
TRACERY_EVENT(rt, floats, TRACERY_FLOAT(f), TRACERY_DOUBLE(d))
TRACERY_EVENT(rt, text, TRACERY_STRING(s), TRACERY_BOOL(flag))
TRACERY_EVENT(rt, lists, TRACERY_ARRAY(S16, arr, 3), TRACERY_SEQUENCE(U32, seq), TRACERY_BLOB(bytes))
TRACERY_EVENT(rt, color, TRACERY_ENUM(rt_color, U8, c), TRACERY_ENUM(rt_color, S32, wide))
TRACERY_EVENT(rt, hex, TRACERY_HEX(U64, addr), TRACERY_HEX(S32, flags), TRACERY_HEX(U8, byte))

int main(void)
{
	TRACERY_EMIT(rt, ints, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, 0, 0, 0, 0);
	TRACERY_EMIT(rt, ints, INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX, UINT8_MAX, UINT16_MAX, UINT32_MAX,
	             UINT64_MAX);
	TRACERY_EMIT(rt, ints, -1, -2, -3, -4, 1, 2, 3, 4);

	TRACERY_EMIT(rt, floats, NAN, NAN);
	TRACERY_EMIT(rt, floats, INFINITY, -INFINITY);
	TRACERY_EMIT(rt, floats, -0.0f, DBL_MAX);
	TRACERY_EMIT(rt, floats, 1.5f, -2.25);
	TRACERY_EMIT(rt, floats, FLT_MIN, DBL_MIN);

	TRACERY_EMIT(rt, text, "", false);
	TRACERY_EMIT(rt, text, "plain ascii", true);
	TRACERY_EMIT(rt, text, "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93", true);
	TRACERY_EMIT(rt, text, NULL, false);

	const int16_t arr[3] = {-32768, 0, 32767};
	const uint32_t seq[4] = {0, 1, 4294967295u, 7};
	const unsigned char bytes[5] = {0x00, 0xff, 0x10, 0x7f, 0x80};
	TRACERY_EMIT(rt, lists, arr, seq, 4, bytes, 5);
	TRACERY_EMIT(rt, lists, arr, seq, 0, bytes, 0);

	TRACERY_EMIT(rt, color, 0, 1);
	TRACERY_EMIT(rt, color, 2, 150);

	TRACERY_EMIT(rt, hex, 0x7f3a5c000b70u, -2, 0);
	TRACERY_EMIT(rt, hex, UINT64_MAX, INT32_MIN, 0xab);
	return 0;
}
