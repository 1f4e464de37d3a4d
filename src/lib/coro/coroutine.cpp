#include "coro/coroutine.hpp"

#include <atomic>
#include <cstdio>
#include <exception>

namespace weft {

namespace {

// Thrown by yield() in a coroutine being destroyed; caught only at the entry.
struct Unwind {};

} // namespace

Coroutine::Coroutine(StackPool& pool, Stack stack, void* body, Invoke invoke, Destroy destroy)
    : stack_(stack), pool_(&pool), body_(body), invoke_(invoke), destroy_body_(destroy),
      id_(next_id()) {}

Coroutine::Id Coroutine::next_id() {
    // Thread number in the high 16 bits, a per-thread count in the low 48
    // (a million a second for nine years): no shared counter to bounce
    // between cores.
    static std::atomic<Id> threads{0};
    thread_local const Id thread = threads.fetch_add(1, std::memory_order_relaxed) + 1;
    thread_local Id count = 0;
    return thread << 48 | (++count & ((Id{1} << 48) - 1));
}

void Coroutine::entry(std::int64_t first, void* self) {
    static_cast<Coroutine*>(self)->run_and_end(first);
}

void Coroutine::run_and_end(std::int64_t first) {
    finish_switch(nullptr, &caller_stack_bottom_, &caller_stack_size_);
    try {
        result_ = invoke_(body_, first);
    } catch (const Unwind&) {
        result_ = kCancelled;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "weft: coroutine %llu ended by an exception: %s\n",
                     static_cast<unsigned long long>(id_), e.what());
        result_ = kFailed;
    } catch (...) {
        std::fprintf(stderr, "weft: coroutine %llu ended by an exception of unknown type\n",
                     static_cast<unsigned long long>(id_));
        result_ = kFailed;
    }
    exit_ = Exit::ending;
    destroy_body_(body_);
    defers_.run_all();
    state_ = State::finished;
    assert(ExceptionState::of_thread().empty() && "a coroutine ends holding exceptions");
    // Nothing resumes a finished coroutine: this switch never returns, and the
    // null fake stack tells ASan this stack's frames are gone.
    start_switch(nullptr, caller_stack_bottom_, caller_stack_size_);
    context_switch(context_, caller_, result_);
    __builtin_unreachable();
}

template <std::int64_t (Coroutine::*Switch)(std::int64_t)>
std::int64_t Coroutine::switch_setting_exceptions_aside(std::int64_t value) {
    ExceptionState& thread = ExceptionState::of_thread();
    const ExceptionState kept = std::exchange(thread, ExceptionState{});
    const std::int64_t result = (this->*Switch)(value);
    thread = kept;
    return result;
}
template std::int64_t
    Coroutine::switch_setting_exceptions_aside<&Coroutine::switch_in>(std::int64_t);
template std::int64_t
    Coroutine::switch_setting_exceptions_aside<&Coroutine::switch_out>(std::int64_t);

std::int64_t Coroutine::refuse_yield() {
    // Throw once to start unwinding; yields from the destructors that run
    // meanwhile, or from deferred calls, get kCancelled without switching.
    if (exit_ == Exit::unwind && std::uncaught_exceptions() == 0) throw Unwind{};
    return kCancelled;
}

void Coroutine::destroy() {
    assert(state_ != State::running && "a running coroutine cannot be destroyed");
    if (state_ == State::suspended) {
        exit_ = Exit::unwind;
        resume(kCancelled);
        assert(state_ == State::finished && "a destroyed coroutine did not end");
    } else if (state_ == State::created) {
        exit_ = Exit::ending;
        result_ = kCancelled;
        destroy_body_(body_);
        defers_.run_all();
    }
    StackPool* const pool = pool_;
    const Stack stack = stack_;
    this->~Coroutine();
    pool->release(stack);
}

void CoroutineDeleter::operator()(Coroutine* coroutine) const {
    coroutine->destroy();
}

} // namespace weft
