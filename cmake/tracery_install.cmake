# What `cmake --install BUILD [--prefix P]` installs, and the package files
# that let other projects build against it (docs/instrumenting.md):
#   P/include/tracery/                      the headers (include/tracery/README.md)
#   P/LIBDIR/libtracery.so.0.x.y + links    the runtime, SONAME libtracery.so.0
#   P/LIBDIR/cmake/Tracery/                 find_package(Tracery): Tracery::tracery
#   P/LIBDIR/pkgconfig/tracery.pc           pkg-config --cflags --libs tracery
#   P/LIBDIR/libtracery-ctl.so.0.x.y + links the control library (src/ctl/), SONAME libtracery-ctl.so.0
#   P/LIBDIR/pkgconfig/tracery-ctl.pc       pkg-config --cflags --libs tracery-ctl
#   P/bin/                                  traceryd, tracery-relayd, tracery, tracery-clock-report
#   P/libexec/tracery/                      the benchmarks (tracery-bench and the micro-benchmarks)
#   P/share/man, bash and zsh completion,   packaging/CMakeLists.txt
#   P/lib/systemd/system
# LIBDIR is GNUInstallDirs' CMAKE_INSTALL_LIBDIR: lib, or lib/<multiarch> on
# Debian when the prefix is /usr. Nothing else is installed: the component
# libraries are static and already inside these programs, and test programs
# stay in the build tree.
#
# Each file belongs to a component, which is a Debian package of `cpack -G
# DEB` (cmake/tracery_package.cmake): tracery (the programs, their man pages,
# completion and units), lib (libtracery0), dev (libtracery-dev), ctl
# (libtracery-ctl0), preload, python, java; bench is installed, never packaged.
include(CMakePackageConfigHelpers)

set(TRACERY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tracery)

# ---- Headers and libtracery ----

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tracery DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# Consumers of the installed package find the headers there (the build tree's
# include/ is the BUILD_INTERFACE given where the target is defined). No
# compile features: C programs need no C++ at all, and C++ programs that use
# tracepoint.hpp ask for cxx_std_20 themselves (the header says so if not).
target_include_directories(tracery INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS tracery EXPORT TraceryTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)
install(TARGETS tracery-ctl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ctl NAMELINK_COMPONENT dev)

# ---- Programs ----

# Programs linked with libtracery.so find it beside their install prefix,
# wherever that is (no LD_LIBRARY_PATH needed for a non-standard prefix).
file(RELATIVE_PATH tracery_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH tracery_libexec_to_lib ${CMAKE_INSTALL_FULL_LIBEXECDIR}/tracery ${CMAKE_INSTALL_FULL_LIBDIR})

install(TARGETS traceryd tracery-relayd tracery-cli tracery-clock-report RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT tracery)

if(TRACERY_BENCHMARKS)
  # The benchmarks are run only when measuring Tracery itself, and the
  # micro-benchmarks have generic names (clock_bench, filter_bench,
  # ringbuf_benchmark, lttng-bench...) that could clash with other packages'
  # programs in a shared bin/: all of them, tracery-bench too, go to
  # libexec/tracery/, as private programs of a package do.
  install(TARGETS tracery-bench RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tracery COMPONENT bench)
  set_target_properties(tracery-bench PROPERTIES INSTALL_RPATH "$ORIGIN/${tracery_libexec_to_lib}")
  set(tracery_micro_benchmarks clock_bench filter_bench enable_check_bench ringbuf_benchmark)
  if(TARGET lttng-bench)
    list(APPEND tracery_micro_benchmarks lttng-bench)
  endif()
  install(TARGETS ${tracery_micro_benchmarks} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tracery
          COMPONENT bench)
  set_target_properties(enable_check_bench PROPERTIES INSTALL_RPATH "$ORIGIN/${tracery_libexec_to_lib}")
endif()

# ---- CMake package: find_package(Tracery) ----

install(EXPORT TraceryTargets NAMESPACE Tracery:: DESTINATION ${TRACERY_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TraceryConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TraceryConfig.cmake INSTALL_DESTINATION ${TRACERY_CMAKE_DIR})
# SameMajorVersion: the major version is the SONAME's (libtracery.so.0), and
# within it the ABI only grows (include/tracery/README.md), so a program built
# for 0.1 works with any later 0.x. AnyNewerVersion would also accept 1.0,
# a different SONAME whose ABI may have changed.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TraceryConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TraceryConfig.cmake ${PROJECT_BINARY_DIR}/TraceryConfigVersion.cmake
  DESTINATION ${TRACERY_CMAKE_DIR} COMPONENT dev)

# ---- pkg-config: tracery.pc, tracery-ctl.pc ----

# Written at install time, with the prefix of that install: `cmake --install
# --prefix P` may install somewhere else than CMAKE_INSTALL_PREFIX, and a .pc
# holds absolute paths.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(tracery_pc_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(tracery_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
install(CODE "
set(TRACERY_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
set(TRACERY_PC_LIBDIR [[${tracery_pc_LIBDIR}]])
set(TRACERY_PC_INCLUDEDIR [[${tracery_pc_INCLUDEDIR}]])
set(TRACERY_PC_VERSION [[${PROJECT_VERSION}]])
foreach(pc tracery tracery-ctl)
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/\${pc}.pc.in\" \"${PROJECT_BINARY_DIR}/\${pc}.pc\" @ONLY)
endforeach()
" COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/tracery.pc ${PROJECT_BINARY_DIR}/tracery-ctl.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

include(${CMAKE_CURRENT_LIST_DIR}/tracery_package.cmake)
