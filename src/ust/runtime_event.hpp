// ust/runtime_event.hpp — what the rest of libtracery needs of the events
// defined at run time (tracery/runtime_event.h, runtime_event.cpp): their
// lock, held across fork() so that a child never inherits it taken.
#pragma once

namespace tracery::ust {

// The lock of tracery_event_define(), taken before every other lock of the
// fork handlers (a definition holds it while the registry's listeners run,
// and they take the daemon link's locks).
void runtime_events_lock_for_fork();
void runtime_events_unlock_after_fork();

} // namespace tracery::ust
