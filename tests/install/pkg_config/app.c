/*
 * A C program built against the installed package with pkg-config only (see
 * the Makefile); install_test.py runs it traced and checks its events.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <stdio.h>

TRACERY_ENUM_LABELS(pc_level, {"low", 0, 0}, {"high", 1, 1});

TRACERY_EVENT(pkgconfig_app, sample, TRACERY_U32(index), TRACERY_S16(offset), TRACERY_STRING(label),
              TRACERY_ENUM(pc_level, U8, level), TRACERY_ARRAY(U8, bytes, 3))

int main(void)
{
	static const char *const labels[] = {"first", "second", "third"};
	for (uint32_t i = 0; i < 3; i++) {
		const uint8_t bytes[3] = {(uint8_t)i, (uint8_t)(i + 10), (uint8_t)(i + 20)};
		TRACERY_EMIT(pkgconfig_app, sample, i, (int16_t)(-100 * (int)i), labels[i], (uint8_t)(i == 2), bytes);
	}
	printf("pkg_config app: 3 events\n");
	return 0;
}
