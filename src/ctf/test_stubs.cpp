// ctf/test_stubs.cpp — no-op runtime entry points for the tracery_ctf tests,
// which link without libtracery (tracepoint.h makes every C++ file that
// includes it register its object's events).
#include "tracery/tracepoint.h"

extern "C" void tracery_register_events(struct tracery_event_desc *const *, struct tracery_event_desc *const *) {}
extern "C" void tracery_unregister_events(struct tracery_event_desc *const *, struct tracery_event_desc *const *) {}
