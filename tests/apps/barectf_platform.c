// tests/apps/barectf_platform.c — a trace written by barectf (python3-barectf
// generates the tracer from tests/ctf_conformance_test.py's configuration):
// this file is the platform barectf leaves to its user (where packets go, the
// clock) and a program that records `request` events into DIR/stream, in
// small packets so that the trace has several. The clock is a counter, so
// that the trace is the same at every run.
//
//   barectf_platform DIR EVENTS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "barectf.h"

struct platform {
	struct barectf_default_ctx ctx;
	uint8_t buf[512];
	FILE *out;
	uint64_t now;
};

static uint64_t clock_value(void *data)
{
	struct platform *p = data;
	p->now += 1234;
	return p->now;
}

static int backend_full(void *data)
{
	(void)data;
	return 0;
}

static void open_packet(void *data)
{
	struct platform *p = data;
	barectf_default_open_packet(&p->ctx);
}

static void close_packet(void *data)
{
	struct platform *p = data;
	barectf_default_close_packet(&p->ctx);
	const size_t size = barectf_packet_buf_size(&p->ctx);
	if (fwrite(barectf_packet_buf(&p->ctx), 1, size, p->out) != size) {
		perror("barectf_platform: write");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: barectf_platform DIR EVENTS\n");
		return 2;
	}
	static struct platform p;
	char path[4096];
	snprintf(path, sizeof path, "%s/stream", argv[1]);
	p.out = fopen(path, "wb");
	if (!p.out) {
		perror(path);
		return 1;
	}
	const struct barectf_platform_callbacks cbs = {
		.default_clock_get_value = clock_value,
		.is_backend_full = backend_full,
		.open_packet = open_packet,
		.close_packet = close_packet,
	};
	barectf_init(&p.ctx, p.buf, sizeof p.buf, cbs, &p);
	open_packet(&p);
	const long events = atol(argv[2]);
	for (long i = 0; i < events; ++i) {
		char name[64];
		snprintf(name, sizeof name, "/srv/item/%ld%s", i, i % 7 ? "" : "/with \"quotes\" and a tab\t.");
		barectf_default_trace_request(&p.ctx, (uint32_t)i, (double)i * 0.25 - 3.0, name,
		                              (int8_t)(i % 256 - 128));
	}
	if (barectf_packet_is_open(&p.ctx) && !barectf_packet_is_empty(&p.ctx))
		close_packet(&p);
	return fclose(p.out) == 0 ? 0 : 1;
}
