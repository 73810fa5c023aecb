# tracery_filter: the filter engines linked into traced programs — verifier,
# interpreter, asmjit JIT and the Filter facade (filter.hpp); the glob matcher
# lives in the front end (the compiler folds string literals with it).
find_package(asmjit CONFIG REQUIRED)

add_library(tracery_filter STATIC verifier.cpp interpreter.cpp jit.cpp filter.cpp gate.cpp)
target_include_directories(tracery_filter PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(tracery_filter PUBLIC tracery_filter_frontend PRIVATE asmjit::asmjit)
set_target_properties(tracery_filter PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

if(TRACERY_FUZZ)
  # Structured random programs: verified against a fixed event, and every
  # accepted one run by both engines, which must agree (see the source).
  tracery_add_fuzzer(fuzz_verify fuzz/fuzz_verify.cpp tracery_filter)
  return()
endif()

# Engine tests: unit cases through both engines, then the differential test
# (random expressions and payloads, interpreter vs JIT), fewer cases under
# sanitizers. Labelled tsan: scripts/test.sh reruns them under ThreadSanitizer.
if(TRACERY_TESTS)
  tracery_add_test(filter_verifier_test SOURCES verifier_test.cpp LIBS tracery_filter)
  tracery_add_test(filter_engine_test
    SOURCES interpreter_test.cpp jit_test.cpp
    LIBS tracery_filter)
  tracery_add_test(filter_differential_test SOURCES differential_test.cpp LIBS tracery_filter)
  if(TRACERY_SANITIZE)
    set(filter_diff_cases 500000)
  else()
    set(filter_diff_cases 3000000)
  endif()
  set_tests_properties(filter_differential_test PROPERTIES ENVIRONMENT "TRACERY_DIFF_CASES=${filter_diff_cases}")
  set_tests_properties(filter_verifier_test filter_engine_test filter_differential_test
    PROPERTIES LABELS "filter;tsan" TIMEOUT 120)
endif()
