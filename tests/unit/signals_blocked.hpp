#pragma once
// For tests that run a LoopGroup on the test's own thread.

#include <pthread.h>

#include <csignal>

// Blocks the server's signals in this thread, so threads started from here
// inherit the mask as the group's own threads do; restores it at the end.
struct SignalsBlocked {
    sigset_t previous;
    SignalsBlocked() {
        sigset_t set;
        sigemptyset(&set);
        for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&set, s);
        pthread_sigmask(SIG_BLOCK, &set, &previous);
    }
    ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous, nullptr); }
};
