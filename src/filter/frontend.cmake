# tracery_filter_frontend: filter expressions -> bytecode (lexer/parser,
# type checker and constant-folding compiler, bytecode wire form). Used by
# the daemon, the CLI and daemonless programs; see bytecode.hpp. Holds the glob
# matcher too (glob.hpp), which the engines share, and the translation of
# expressions into the kernel's event filters (kernel_filter.hpp).
add_library(tracery_filter_frontend STATIC bytecode.cpp parser.cpp compiler.cpp glob.cpp kernel_filter.cpp)
target_include_directories(tracery_filter_frontend PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(tracery_filter_frontend PUBLIC tracery_event)
set_target_properties(tracery_filter_frontend PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

if(TRACERY_FUZZ)
  # Arbitrary bytes as an expression, compiled against an event with every
  # field kind; checks the compiler's invariants (see the source).
  tracery_add_fuzzer(fuzz_compile fuzz/fuzz_compile.cpp tracery_filter_frontend)
  # Arbitrary bytes as an expression, translated for a kernel event with
  # every kind of field; checks the refusal's place or the text's bounds.
  tracery_add_fuzzer(fuzz_kernel_filter fuzz/fuzz_kernel_filter.cpp tracery_filter_frontend)
  return()
endif()

if(TRACERY_TESTS)
  tracery_add_test(filter_frontend_test
    SOURCES parser_test.cpp compiler_test.cpp bytecode_test.cpp
    LIBS tracery_filter_frontend)
endif()
