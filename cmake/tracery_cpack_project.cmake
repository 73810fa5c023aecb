# Read by cpack when it runs (CPACK_PROJECT_CONFIG_FILE, cmake/tracery_package.cmake):
# the packages' file times are those of the changelog's newest entry
# (packaging/gen_package_docs.py wrote it to CPACK_TRACERY_SOURCE_DATE_EPOCH_FILE)
# unless the environment's SOURCE_DATE_EPOCH names another, so that the same
# sources make the same packages.
if(NOT DEFINED ENV{SOURCE_DATE_EPOCH})
  file(READ "${CPACK_TRACERY_SOURCE_DATE_EPOCH_FILE}" tracery_source_date_epoch)
  string(STRIP "${tracery_source_date_epoch}" tracery_source_date_epoch)
  set(ENV{SOURCE_DATE_EPOCH} "${tracery_source_date_epoch}")
endif()
