# `cpack -G DEB` in a build directory: one Debian package per install
# component (cmake/tracery_install.cmake), under /usr:
#   tracery          traceryd, tracery-relayd, tracery, tracery-clock-report, their man pages
#                    (tracery(1), tracery-VERB(1), traceryd(8), tracery-relayd(8)), the bash and
#                    zsh completion, traceryd.service and traceryd.socket
#   libtracery0      libtracery.so.0 (the run-time instrumented programs load)
#   libtracery-dev   the headers, libtracery.so, tracery.pc, the CMake package, tracery(3), tracery-ctl(3)
#   libtracery-ctl0  libtracery-ctl.so.0, the control library
#   tracery-preload  the LD_PRELOAD helpers (tracery exec)
#   python3-tracery  the Python package, when it is built, in /usr/lib/python3/dist-packages
#   tracery-java     the Java agent, when it is built
# The benchmarks are in none. Each package's run-time dependencies are read
# from its ELF files by dpkg-shlibdeps (libc, libstdc++, OpenSSL, libelf...);
# libtracery.so.0, which it finds in libtracery0's staging directory beside
# the package's own, is named as a dependency on libtracery0 of this release.
# The man pages are gzipped (packaging/gen_docs.py), as Debian's policy wants.
# Every package holds /usr/share/doc/PACKAGE/copyright (machine-readable:
# Tracery's and the compiled-in libraries' licences) and changelog.gz
# (packaging/debian/changelog, whose newest entry must be of this version),
# made by packaging/gen_package_docs.py; its files' times are that entry's
# (or SOURCE_DATE_EPOCH's), so the same sources make the same packages.
# tests/packaging_test.py runs lintian on them.
# scripts/package.sh configures a tree for packaging (the prefix /usr, no
# tests or benchmarks) and runs cpack; `cpack -G DEB` in any build tree makes
# the same packages.
set(CPACK_PACKAGE_NAME tracery)
set(CPACK_PACKAGE_VENDOR "Tracery")
# The project has no public address; .example is the domain kept for names that stand for one (RFC 2606).
set(CPACK_PACKAGE_CONTACT "Tracery maintainers <maintainers@tracery.example>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps runs in each component's staging directory: libtracery0's is ../lib.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "../lib${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
# The shlibs files of libtracery0 and libtracery-ctl0, for other projects' packages.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# The ELF files stripped (Debian's policy); and the packages that put libraries in the library directory run
# ldconfig through dpkg's trigger (packaging/debian/triggers).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(tracery_ldconfig_trigger ${PROJECT_SOURCE_DIR}/packaging/debian/triggers)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${tracery_ldconfig_trigger})
set(CPACK_DEBIAN_CTL_PACKAGE_CONTROL_EXTRA ${tracery_ldconfig_trigger})
set(CPACK_DEBIAN_PRELOAD_PACKAGE_CONTROL_EXTRA ${tracery_ldconfig_trigger})
set(tracery_lib_depends "libtracery0 (= ${PROJECT_VERSION})")

set(CPACK_COMPONENTS_ALL tracery lib dev preload)
set(CPACK_DEBIAN_TRACERY_PACKAGE_NAME tracery)
set(CPACK_DEBIAN_TRACERY_PACKAGE_SECTION utils)
# Each package's description: its synopsis (under 80 characters), then lines of at most 79 (Debian's policy);
# the first paragraph of the extended one says what Tracery is. CPack writes it as the control file wants it
# (a space before each line of the extended description, " ." for an empty one).
set(tracery_about "Tracery records the events of instrumented user-space programs and of
the Linux kernel into CTF 1.8 traces, which babeltrace2 reads, and reads
them back: views, statistics, analyses, exports and SQL.
")
set(CPACK_DEBIAN_TRACERY_DESCRIPTION "Linux tracer: session daemon, relay and command line
${tracery_about}
This package holds the session daemon traceryd, the relay tracery-relayd
and the tracery command, with their man pages, bash and zsh completion and
the systemd units of the system-wide daemon.")
# libcurl is loaded with dlopen (src/base/clickhouse_client.cpp), which dpkg-shlibdeps cannot see: the package
# that holds the libcurl.so.4 found here is named as a dependency (Debian 12: libcurl4; libcurl4t64 on later ones).
find_library(tracery_libcurl NAMES libcurl.so.4 libcurl-gnutls.so.4)
set(tracery_curl_package libcurl4)
if(tracery_libcurl)
  file(REAL_PATH ${tracery_libcurl} tracery_libcurl_file)
  execute_process(COMMAND dpkg-query -S ${tracery_libcurl_file} OUTPUT_VARIABLE tracery_curl_owner ERROR_QUIET)
  if(tracery_curl_owner MATCHES "^([a-z0-9][a-z0-9.+-]*)[:,]")
    set(tracery_curl_package ${CMAKE_MATCH_1})
  endif()
endif()
set(CPACK_DEBIAN_TRACERY_PACKAGE_DEPENDS ${tracery_curl_package})
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libtracery0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION "Linux tracer: run-time library of instrumented programs
${tracery_about}
This package holds libtracery.so.0, which programs instrumented with
Tracery's tracepoints load: it records their enabled events.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtracery-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ${tracery_lib_depends})
set(CPACK_DEBIAN_DEV_DESCRIPTION "Linux tracer: development files of libtracery and libtracery-ctl
${tracery_about}
This package holds the headers for instrumenting C and C++ programs
(tracery/tracepoint.h) and for controlling sessions (tracery/ctl.h), the
libraries' links, their pkg-config files and CMake package, and the man
pages tracery(3) and tracery-ctl(3).")
set(CPACK_DEBIAN_PRELOAD_PACKAGE_NAME tracery-preload)
set(CPACK_DEBIAN_PRELOAD_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PRELOAD_PACKAGE_DEPENDS ${tracery_lib_depends})
set(CPACK_DEBIAN_PRELOAD_DESCRIPTION "Linux tracer: LD_PRELOAD helpers for programs without tracepoints
${tracery_about}
This package holds the libraries that `tracery exec` preloads into
unmodified programs: their libc calls, pthread locks and condition waits,
function entries and exits, and dynamic loading become events.")
list(APPEND CPACK_COMPONENTS_ALL ctl)
set(CPACK_DEBIAN_CTL_PACKAGE_NAME libtracery-ctl0)
set(CPACK_DEBIAN_CTL_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CTL_DESCRIPTION "Linux tracer: control library
${tracery_about}
This package holds libtracery-ctl.so.0, a C library that drives the
session daemon as the tracery command does: sessions, channels, events,
contexts, tracking, start and stop, snapshots, rotation, triggers and their
notifications.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${CPACK_DEBIAN_DEV_PACKAGE_DEPENDS}, libtracery-ctl0 (= ${PROJECT_VERSION})")
if(TARGET tracery-python)
  # python3-tracery holds the package where Debian's python3 imports it under /usr: lib/python3/dist-packages,
  # whatever the prefix of this build (TRACERY_PYTHON_INSTALL_DIR is the place for that prefix, e.g.
  # lib/python3.11/dist-packages under /usr/local). So it is an install component of its own, python_deb,
  # which only cpack installs (EXCLUDE_FROM_ALL), with its own way to libtracery-ctl and libtracery.
  set(python_deb_dir lib/python3/dist-packages/tracery)
  set(python_dir ${PROJECT_SOURCE_DIR}/src/agents/python)
  get_directory_property(python_files DIRECTORY ${python_dir} DEFINITION package_outputs)
  get_directory_property(python_minor DIRECTORY ${python_dir} DEFINITION Python3_VERSION_MINOR)
  file(RELATIVE_PATH python_deb_to_lib ${CPACK_PACKAGING_INSTALL_PREFIX}/${python_deb_dir}
       ${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
  set(ctl_library ${python_deb_to_lib}/libtracery-ctl.so.0)
  configure_file(${python_dir}/tracery/_ctl_location.py.in ${PROJECT_BINARY_DIR}/python_deb/_ctl_location.py @ONLY)
  install(TARGETS tracery-python LIBRARY DESTINATION ${python_deb_dir} COMPONENT python_deb EXCLUDE_FROM_ALL)
  install(FILES ${python_files} ${PROJECT_BINARY_DIR}/python_deb/_ctl_location.py DESTINATION ${python_deb_dir}
          COMPONENT python_deb EXCLUDE_FROM_ALL)
  get_target_property(python_rpath tracery-python INSTALL_RPATH)
  if(NOT "$ORIGIN/${python_deb_to_lib}" IN_LIST python_rpath)
    set_property(TARGET tracery-python APPEND PROPERTY INSTALL_RPATH "$ORIGIN/${python_deb_to_lib}")
  endif()
  math(EXPR python_next_minor "${python_minor} + 1")
  list(APPEND CPACK_COMPONENTS_ALL python_deb)
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_NAME python3-tracery)
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_SECTION python)
  # The extension module is built for this python3 (its ABI tag names 3.X): that release and no other.
  set(CPACK_DEBIAN_PYTHON_DEB_PACKAGE_DEPENDS
      "python3 (>= 3.${python_minor}~), python3 (<< 3.${python_next_minor}), ${tracery_lib_depends}, libtracery-ctl0 (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_PYTHON_DEB_DESCRIPTION "Linux tracer: Python package
${tracery_about}
This package holds the tracery package of Debian's python3: typed events
and a logging handler whose records become events, and tracery.ctl, the
control library's Python binding.")
endif()
if(TARGET tracery-java)
  list(APPEND CPACK_COMPONENTS_ALL java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_NAME tracery-java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_DEPENDS ${tracery_lib_depends})
  set(CPACK_DEBIAN_JAVA_DESCRIPTION "Linux tracer: Java agent
${tracery_about}
This package holds tracery.jar and its JNI library: typed events, a
java.util.logging handler and a log4j 2 appender whose records become
events.")
endif()

# ---- /usr/share/doc/PACKAGE of every package: copyright, changelog.gz (packaging/gen_package_docs.py); lintian
# overrides

set(package_docs ${PROJECT_BINARY_DIR}/packaging/debian)
set(package_docs_source ${PROJECT_SOURCE_DIR}/packaging)
add_custom_command(
  OUTPUT ${package_docs}/copyright ${package_docs}/changelog.gz ${package_docs}/source_date_epoch
  COMMAND ${TRACERY_PYTHON} ${package_docs_source}/gen_package_docs.py
          --changelog ${package_docs_source}/debian/changelog --copyright ${package_docs_source}/debian/copyright.in
          --version ${PROJECT_VERSION} --out ${package_docs}
  DEPENDS ${package_docs_source}/gen_package_docs.py ${package_docs_source}/gen_docs.py
          ${package_docs_source}/debian/changelog ${package_docs_source}/debian/copyright.in
  COMMENT "Debian packages' copyright and changelog.gz"
  VERBATIM)
add_custom_target(tracery-package-docs ALL DEPENDS ${package_docs}/copyright ${package_docs}/changelog.gz)
# Only in the packages (EXCLUDE_FROM_ALL: cpack installs each component by itself, `cmake --install` all of them).
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} component_var)
  set(package ${CPACK_DEBIAN_${component_var}_PACKAGE_NAME})
  install(FILES ${package_docs}/copyright ${package_docs}/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component} EXCLUDE_FROM_ALL)
  # The lintian tags a package overrides, each with its reason (packaging/debian/PACKAGE.lintian-overrides).
  set(overrides ${package_docs_source}/debian/${package}.lintian-overrides)
  if(EXISTS ${overrides})
    install(FILES ${overrides} RENAME ${package} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
            COMPONENT ${component} EXCLUDE_FROM_ALL)
  endif()
endforeach()
# The packages' file times are the changelog's newest entry's (unless SOURCE_DATE_EPOCH says otherwise), read
# when cpack runs (cmake/tracery_cpack_project.cmake): the same sources make the same packages.
set(CPACK_TRACERY_SOURCE_DATE_EPOCH_FILE ${package_docs}/source_date_epoch)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/tracery_cpack_project.cmake)

include(CPack)
