#pragma once
// A coroutine: a body running on its own pooled stack, switched to by
// resume(value) and away by yield(value), one 64-bit value each way.
//
// The Coroutine object and its body callable live at the top of the
// coroutine's own stack, so creating one costs no heap allocation, only a
// stack from the pool.
//
// Ending. A body that returns ends the coroutine: its return value (0 for a
// void body) is what the last resume() returns. An exception escaping the
// body is caught at the entry, logged, and ends only that coroutine; the last
// resume() then returns kFailed. Deferred calls run newest first when the
// coroutine ends.
//
// Destroying a suspended coroutine unwinds its stack: the pending yield()
// throws an internal exception (never an std::exception) that runs the
// destructors of the body's locals and is caught at the entry; then the
// deferred calls run. While it unwinds, a yield() returns kCancelled at once
// instead of switching. Hence: never call yield() inside a noexcept function,
// and never swallow exceptions with catch (...) without rethrowing.

#include "coro/context.hpp"
#include "coro/defer.hpp"
#include "coro/stack_pool.hpp"
#include "util/sanitizers.hpp"

#include <cxxabi.h>

#include <cassert>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if WEFT_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace weft {

class Coroutine;

// The C++ runtime's per-thread exception state (the Itanium ABI's
// __cxa_eh_globals: the caught-exception stack and the uncaught count),
// which each coroutine must have for itself.
//
// Across every switch the thread's state is empty: a side that has some
// (it switches inside a catch block, or while an exception unwinds its
// stack) puts it aside on its own stack first and takes it back after. So a
// coroutine suspended inside a catch block and another leaving its own never
// free each other's exceptions, and the common switch only checks.
struct ExceptionState {
    void* caught = nullptr;
    unsigned int uncaught = 0;

    bool empty() const { return (reinterpret_cast<std::uintptr_t>(caught) | uncaught) == 0; }

    // The thread's state, for a look: a thread-local load. Before the runtime
    // was first asked on this thread, a stand-in that is never empty, so
    // the caller takes its slow path, which asks with of_thread().
    static const ExceptionState& peek_thread() { return *thread_state_; }
    // The thread's state: the runtime's own, at a fixed address per thread.
    // Asking for it costs a call into libstdc++ and its __tls_get_addr (7 ns
    // a round trip measured), so ask once per thread.
    static ExceptionState& of_thread();

private:
    static ExceptionState not_asked_yet_;
    static thread_local ExceptionState* thread_state_;
};

inline ExceptionState ExceptionState::not_asked_yet_{nullptr, 1}; // never written
inline thread_local ExceptionState* ExceptionState::thread_state_ = &not_asked_yet_;

inline ExceptionState& ExceptionState::of_thread() {
    if (thread_state_ == &not_asked_yet_) [[unlikely]]
        thread_state_ = reinterpret_cast<ExceptionState*>(abi::__cxa_get_globals());
    return *thread_state_;
}

struct CoroutineDeleter {
    void operator()(Coroutine* coroutine) const;
};

// Owns a coroutine; dropping it destroys the coroutine (see above).
using CoroutinePtr = std::unique_ptr<Coroutine, CoroutineDeleter>;

class Coroutine {
public:
    enum class State : std::uint8_t { created, running, suspended, finished };
    using Id = std::uint64_t;

    // What the last resume() returns when the body ended by an exception.
    static constexpr std::int64_t kFailed = std::numeric_limits<std::int64_t>::min();
    // What yield() returns in a coroutine that is being destroyed.
    static constexpr std::int64_t kCancelled = -ECANCELED;
    // Bodies are stored on the stack, below the Coroutine: keep them small.
    static constexpr std::size_t kMaxBodySize = 1024;

    // A new coroutine that will run body(first) or body() at its first
    // resume(first); nullptr with errno set when no stack can be had.
    template <class Body>
    static CoroutinePtr create(Body&& body, StackPool& pool = StackPool::this_thread());

    // Runs the coroutine until it yields or ends; returns the value it yielded
    // or its result. Only a created or suspended coroutine can be resumed.
    std::int64_t resume(std::int64_t value = 0);
    // Suspends the running coroutine, handing `value` to its resumer; returns
    // the value of the resume() that continues it.
    std::int64_t yield(std::int64_t value = 0);

    // The coroutine running on this thread, or nullptr outside any.
    static Coroutine* current() { return current_; }

    template <class F>
    DeferId defer(F fn) {
        return defers_.push(fn);
    }
    DeferId defer(void (*fn)(void*), void* arg) { return defers_.push(fn, arg); }
    void disarm(DeferId id) { defers_.disarm(id); }

    // A pointer for the layer that runs the coroutine (the loop keeps its
    // task record there); the coroutine itself never reads it.
    void* user() const { return user_; }
    void set_user(void* user) { user_ = user; }

    // Unique on this thread and across threads.
    Id id() const { return id_; }
    State state() const { return state_; }
    bool finished() const { return state_ == State::finished; }
    // What the last resume() returned once it finished (kCancelled if it
    // was destroyed unfinished).
    std::int64_t result() const { return result_; }
    const Stack& stack() const { return stack_; }

private:
    friend struct CoroutineDeleter;
    using Invoke = std::int64_t (*)(void* body, std::int64_t first);
    using Destroy = void (*)(void* body);
    enum class Exit : std::uint8_t { none, unwind, ending };

    Coroutine(StackPool& pool, Stack stack, void* body, Invoke invoke, Destroy destroy);
    ~Coroutine() = default;

    template <class Body>
    static std::int64_t invoke(void* body, std::int64_t first);
    static void entry(std::int64_t first, void* self);
    [[noreturn]] void run_and_end(std::int64_t first);
    [[gnu::cold, gnu::noinline]] std::int64_t refuse_yield();
    std::int64_t switch_in(std::int64_t value);
    std::int64_t switch_out(std::int64_t value);
    // switch_in or switch_out by a side that holds exceptions: the thread's
    // state is set aside on this stack across the switch, and taken back.
    template <std::int64_t (Coroutine::*Switch)(std::int64_t)>
    [[gnu::noinline]] std::int64_t switch_setting_exceptions_aside(std::int64_t value);
    void destroy();
    static Id next_id();

    // Sanitizer bookkeeping around each switch; nothing in other builds.
    void start_switch(void** fake_stack, const void* bottom, std::size_t size);
    void finish_switch(void* fake_stack, const void** bottom, std::size_t* size);

    Context context_; // this coroutine's while it is not running
    Context caller_;  // its resumer's while it runs
    Stack stack_;
    StackPool* pool_;
    void* body_;
    Invoke invoke_;
    Destroy destroy_body_;
    void* user_ = nullptr;
    Id id_;
    std::int64_t result_ = 0;
    State state_ = State::created;
    Exit exit_ = Exit::none;
    DeferList defers_;
    const void* caller_stack_bottom_ = nullptr; // the resumer's stack, for ASan
    std::size_t caller_stack_size_ = 0;

    inline static thread_local Coroutine* current_ = nullptr;
};

// Yields the coroutine running on this thread.
inline std::int64_t yield(std::int64_t value = 0) {
    assert(Coroutine::current() != nullptr && "yield() outside a coroutine");
    return Coroutine::current()->yield(value);
}

template <class Body>
CoroutinePtr Coroutine::create(Body&& body, StackPool& pool) {
    using B = std::decay_t<Body>;
    static_assert(sizeof(B) <= kMaxBodySize, "capture less in a coroutine body");
    static_assert(std::is_invocable_v<B&, std::int64_t> || std::is_invocable_v<B&>,
                  "a coroutine body is called as body(int64_t) or body()");
    const Stack stack = pool.acquire();
    if (!stack) return nullptr;

    auto align_down = [](std::byte* p, std::size_t to) {
        return reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(p) & ~(to - 1));
    };
    std::byte* const self_at = align_down(stack.top() - sizeof(Coroutine), alignof(Coroutine));
    std::byte* const body_at = align_down(self_at - sizeof(B), alignof(B) < 16 ? 16 : alignof(B));
    B* stored = nullptr;
    if constexpr (std::is_nothrow_constructible_v<B, Body&&>) {
        stored = new (body_at) B(std::forward<Body>(body));
    } else {
        try {
            stored = new (body_at) B(std::forward<Body>(body));
        } catch (...) {
            pool.release(stack);
            throw;
        }
    }
    auto* self = new (self_at)
        Coroutine(pool, stack, stored, &invoke<B>, [](void* b) { static_cast<B*>(b)->~B(); });
    weft_context_make(&self->context_, body_at, &Coroutine::entry, self);
    return CoroutinePtr(self);
}

template <class Body>
std::int64_t Coroutine::invoke(void* body, std::int64_t first) {
    Body& b = *static_cast<Body*>(body);
    if constexpr (std::is_invocable_v<Body&, std::int64_t>) {
        if constexpr (std::is_void_v<std::invoke_result_t<Body&, std::int64_t>>) {
            b(first);
            return 0;
        } else {
            return static_cast<std::int64_t>(b(first));
        }
    } else {
        if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
            b();
            return 0;
        } else {
            return static_cast<std::int64_t>(b());
        }
    }
}

inline std::int64_t Coroutine::resume(std::int64_t value) {
    assert((state_ == State::created || state_ == State::suspended) &&
           "resume() of a coroutine that cannot run");
    if (!ExceptionState::peek_thread().empty()) [[unlikely]]
        return switch_setting_exceptions_aside<&Coroutine::switch_in>(value);
    return switch_in(value);
}

inline std::int64_t Coroutine::yield(std::int64_t value) {
    assert(current_ == this && "yield() of a coroutine that is not running");
    if (exit_ != Exit::none) [[unlikely]]
        return refuse_yield();
    std::int64_t result;
    if (ExceptionState::peek_thread().empty()) [[likely]] {
        result = switch_out(value);
    } else {
        result = switch_setting_exceptions_aside<&Coroutine::switch_out>(value);
    }
    if (exit_ != Exit::none) [[unlikely]]
        return refuse_yield();
    return result;
}

inline std::int64_t Coroutine::switch_in(std::int64_t value) {
    Coroutine* const resumer = current_;
    current_ = this;
    state_ = State::running;
    void* fake_stack = nullptr;
    start_switch(&fake_stack, stack_.base, stack_.size);
    const std::int64_t result = context_switch(caller_, context_, value);
    finish_switch(fake_stack, nullptr, nullptr);
    current_ = resumer;
    return result;
}

inline std::int64_t Coroutine::switch_out(std::int64_t value) {
    state_ = State::suspended;
    void* fake_stack = nullptr;
    start_switch(&fake_stack, caller_stack_bottom_, caller_stack_size_);
    const std::int64_t result = context_switch(context_, caller_, value);
    finish_switch(fake_stack, &caller_stack_bottom_, &caller_stack_size_);
    return result;
}

inline void Coroutine::start_switch([[maybe_unused]] void** fake_stack,
                                    [[maybe_unused]] const void* bottom,
                                    [[maybe_unused]] std::size_t size) {
#if WEFT_ASAN
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#endif
}

inline void Coroutine::finish_switch([[maybe_unused]] void* fake_stack,
                                     [[maybe_unused]] const void** bottom,
                                     [[maybe_unused]] std::size_t* size) {
#if WEFT_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#endif
}

} // namespace weft
