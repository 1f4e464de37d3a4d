#include "event/completion_event.hpp"

#include <cassert>

namespace weft {

Ref<CompletionEvent> CompletionEvent::of(Coroutine& coroutine) {
    Task* task = static_cast<Task*>(coroutine.user());
    assert(task && !coroutine.finished() && "the completion of a live coroutine on a loop");
    if (task->completion) {
        auto* event = static_cast<CompletionEvent*>(task->completion);
        event->retain();
        return Ref<CompletionEvent>::adopt(event);
    }
    // One reference is the coroutine's, given up when it ends; one the caller's.
    auto* event = Event::make<CompletionEvent>(*Loop::current(), coroutine.id());
    event->retain();
    task->completion = event;
    coroutine.defer([event] {
        Coroutine* self = Coroutine::current();
        static_cast<Task*>(self->user())->completion = nullptr;
        event->complete(self->result());
        event->release();
    });
    return Ref<CompletionEvent>::adopt(event);
}

} // namespace weft
