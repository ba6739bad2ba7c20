# ppo/build_info.cmake: writes build_info.h at build time (cmake -P), so a checkpoint, a report or a
# benchmark names the commit the binary was built from, not the one CMake was configured at.
# Inputs: SRC (build_info.h.in), OUT, SOURCE_DIR, PROJECT_VERSION, CMAKE_C_COMPILER_ID,
# CMAKE_C_COMPILER_VERSION, CMAKE_BUILD_TYPE. The file is replaced only when its text changes, so an
# unchanged commit rebuilds nothing. "+dirty" marks uncommitted changes to tracked files.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE PPO_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT PPO_GIT_COMMIT)
  set(PPO_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty)
    set(PPO_GIT_COMMIT "${PPO_GIT_COMMIT}+dirty")
  endif()
endif()
configure_file(${SRC} ${OUT}.tmp @ONLY)
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
