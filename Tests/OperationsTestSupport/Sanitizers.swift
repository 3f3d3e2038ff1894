// Sanitizers.swift — whether the test process runs under AddressSanitizer (ThreadSanitizer's
// flag is in Randomness.swift), so long-running tests can scale themselves down.
import Foundation

/// True when the process runs under AddressSanitizer (its runtime exports __asan_init).
public let runningUnderAddressSanitizer: Bool = dlsym(nil, "__asan_init") != nil

/// True under either sanitizer: everything runs several times slower.
public var runningUnderSanitizer: Bool { runningUnderThreadSanitizer || runningUnderAddressSanitizer }
