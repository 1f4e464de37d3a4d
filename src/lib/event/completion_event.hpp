#pragma once
// Every coroutine on a loop is an event: CompletionEvent::of(coroutine)
// completes with its result when it ends (kCancelled if it was destroyed,
// kFailed if an exception ended it), and replays that to later awaiters.

#include "event/event.hpp"
#include "loop/loop.hpp"

namespace weft {

class CompletionEvent final : public Event {
public:
    // The completion of a live coroutine that runs on a loop; one event per
    // coroutine, shared by every caller.
    static Ref<CompletionEvent> of(Coroutine& coroutine);

    std::string info() const override { return describe("coroutine") + " " + std::to_string(id_); }

private:
    friend class Event; // make()
    CompletionEvent(Loop& loop, Coroutine::Id id) : Event(loop), id_(id) {}
    Coroutine::Id id_;
};

} // namespace weft
