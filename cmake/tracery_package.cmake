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
# scripts/package.sh configures a tree for packaging (the prefix /usr, no
# tests or benchmarks) and runs cpack; `cpack -G DEB` in any build tree makes
# the same packages.
set(CPACK_PACKAGE_NAME tracery)
set(CPACK_PACKAGE_VENDOR "Tracery")
set(CPACK_PACKAGE_CONTACT "Tracery maintainers <tracery@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Linux tracer for user space programs and the kernel, writing CTF traces")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps runs in each component's staging directory: libtracery0's is ../lib.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "../lib${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
set(CPACK_DEBIAN_LIB_PACKAGE_GENERATE_SHLIBS ON) # libtracery0's shlibs file, for other projects' packages
set(tracery_lib_depends "libtracery0 (= ${PROJECT_VERSION})")

set(CPACK_COMPONENTS_ALL tracery lib dev preload)
set(CPACK_DEBIAN_TRACERY_PACKAGE_NAME tracery)
set(CPACK_DEBIAN_TRACERY_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TRACERY_DESCRIPTION "Tracery's session daemon, relay and command (man pages, completion, systemd units)")
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libtracery0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION "Tracery's run-time library, which instrumented programs load")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtracery-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ${tracery_lib_depends})
set(CPACK_DEBIAN_DEV_DESCRIPTION "Tracery's headers and libraries for instrumenting and controlling programs")
set(CPACK_DEBIAN_PRELOAD_PACKAGE_NAME tracery-preload)
set(CPACK_DEBIAN_PRELOAD_PACKAGE_DEPENDS ${tracery_lib_depends})
set(CPACK_DEBIAN_PRELOAD_DESCRIPTION "Tracery's LD_PRELOAD helpers: libc, pthread, function and dl events of unmodified programs")
list(APPEND CPACK_COMPONENTS_ALL ctl)
set(CPACK_DEBIAN_CTL_PACKAGE_NAME libtracery-ctl0)
set(CPACK_DEBIAN_CTL_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CTL_DESCRIPTION "Tracery's control library: sessions, channels, events, triggers from C")
set(CPACK_DEBIAN_CTL_PACKAGE_GENERATE_SHLIBS ON)
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
  set(CPACK_DEBIAN_PYTHON_DEB_DESCRIPTION "Tracery's Python package: typed events, a logging handler, tracery.ctl")
endif()
if(TARGET tracery-java)
  list(APPEND CPACK_COMPONENTS_ALL java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_NAME tracery-java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_DEPENDS ${tracery_lib_depends})
  set(CPACK_DEBIAN_JAVA_DESCRIPTION "Tracery's Java agent (java.util.logging handler, JNI)")
endif()
include(CPack)
