# tracery_add_test(NAME SOURCES... LIBS ...): a GoogleTest binary registered with CTest.
function(tracery_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest_main Threads::Threads)
  # The tests' own code at -O1 in a Release tree: the code under test keeps
  # -O3, and the tests compile in a quarter less time (messages_test.cpp,
  # GCC 12: 15.4 CPU seconds at -O3, 11.4 at -O1).
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  add_test(NAME ${name} COMMAND ${name})
endfunction()

# tracery_add_fuzzer(NAME SOURCE LIB [LIBS...]): a libFuzzer target over
# SOURCE (TRACERY_FUZZ builds, clang), with LIB, the library it exercises,
# compiled for coverage; LIBS are linked as they are.
function(tracery_add_fuzzer name source lib)
  set(sanitizers address,undefined)
  target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link,${sanitizers})
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,${sanitizers})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,${sanitizers})
  target_link_libraries(${name} PRIVATE ${lib} ${ARGN})
endfunction()
