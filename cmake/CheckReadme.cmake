# Checks the numbers a module README quotes against what its walkthrough prints (cmake -P; no Python).
# Holds the README test's whole logic; tt_add_module registers it. Timings are never checked.
#
#   cmake -DREADME=modules/12_attention/README.md -DWALKTHROUGH=build/modules/walkthrough_12
#         [-DNAME=walkthrough_12] -P cmake/CheckReadme.cmake
#
# A checked block is a fenced block whose opening line is
#
#   ```text tt-check: [VAR=VALUE ...] [walkthrough arguments ...]
#
# e.g. "```text tt-check: OMP_NUM_THREADS=2 --step 10". Every non-blank line of the block (trailing
# spaces ignored) must appear as a whole line in the walkthrough's stdout when it runs with those
# settings and arguments. Blocks with the same ARGS share one run, so a README with blocks for
# three steps runs its walkthrough at most three times. OMP_WAIT_POLICY is passive unless a block
# sets it: a spinning OpenMP pool makes a walkthrough many times slower on a busy machine. And
# OMP_NUM_THREADS is 2 unless a block sets it, so that a check gives the same answer on any
# machine, busy or idle (a walkthrough would otherwise take the cores it finds idle).
#
# A line that is missing fails the test with its README line and, when some output line begins the
# same way, the output lines that come closest (the longest common beginning), e.g.
#
#   README.md:363: this line is not in the output of `walkthrough_12 --step 10`
#   (OMP_NUM_THREADS=2):
#     |     1024      10.0 MiB     2.1 MiB
#   the closest lines of the output:
#     |     1024      12.0 MiB     2.1 MiB

cmake_minimum_required(VERSION 3.24)

foreach(var README WALKTHROUGH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "CheckReadme: -D${var}=... is required (see the top of cmake/CheckReadme.cmake)")
  endif()
endforeach()
if(NOT DEFINED NAME)
  get_filename_component(NAME "${WALKTHROUGH}" NAME_WE)
endif()
if(NOT EXISTS "${README}")
  message(FATAL_ERROR "CheckReadme: there is no README at ${README}")
endif()
if(NOT EXISTS "${WALKTHROUGH}")
  message(FATAL_ERROR "CheckReadme: the walkthrough ${WALKTHROUGH} is not built")
endif()

# --- reading the README line by line ---------------------------------------------------------------
# A CMake list splits on ';', and '[' ']' and '\' change how it splits. The text gets those
# characters replaced by control characters before it becomes a list, and back for each line.
string(ASCII 1 SEMI)
string(ASCII 2 OPEN)
string(ASCII 3 CLOSE)
string(ASCII 4 BSLASH)
string(ASCII 5 NO_ARGS)  # the ARGS of a block that gives none (the walkthrough run as it is)

function(tt_readme_protect out text)
  string(REPLACE "\\" "${BSLASH}" text "${text}")
  string(REPLACE ";" "${SEMI}" text "${text}")
  string(REPLACE "[" "${OPEN}" text "${text}")
  string(REPLACE "]" "${CLOSE}" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(tt_readme_restore out text)
  string(REPLACE "${SEMI}" ";" text "${text}")
  string(REPLACE "${OPEN}" "[" text "${text}")
  string(REPLACE "${CLOSE}" "]" text "${text}")
  string(REPLACE "${BSLASH}" "\\" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

file(READ "${README}" readme_text)
string(REPLACE "\r" "" readme_text "${readme_text}")
tt_readme_protect(readme_text "${readme_text}")
# Each line gets a leading marker so that a blank line is still a list element ("" would vanish
# where CMake joins lists).
string(REPLACE "\n" ";|" readme_lines "|${readme_text}")

# Walks the lines: for each block, the distinct ARGS string gets a group number; group g collects
# the expected lines (GROUP_<g>_LINES) and their README line numbers (GROUP_<g>_NUMBERS).
set(groups "")          # the distinct ARGS strings, in order of first use
set(in_block FALSE)
set(block_indent "")
set(block_open 0)
set(number 0)
foreach(entry IN LISTS readme_lines)
  math(EXPR number "${number} + 1")
  string(SUBSTRING "${entry}" 1 -1 line)
  if(NOT in_block)
    if(line MATCHES "^( *)```text tt-check:(.*)$")
      set(in_block TRUE)
      set(block_open ${number})
      set(block_indent "${CMAKE_MATCH_1}")
      set(block_lines 0)
      string(STRIP "${CMAKE_MATCH_2}" args)
      if(args STREQUAL "")
        set(args "${NO_ARGS}")  # an empty element would vanish from the list of groups
      endif()
      list(FIND groups "${args}" g)
      if(g EQUAL -1)
        list(LENGTH groups g)
        list(APPEND groups "${args}")
        set(GROUP_${g}_LINES "")
        set(GROUP_${g}_NUMBERS "")
        set(GROUP_${g}_OPEN ${number})
      endif()
    elseif(line MATCHES "tt-check")
      string(STRIP "${line}" shown)
      if(shown MATCHES "^```")
        tt_readme_restore(shown "${shown}")
        message(FATAL_ERROR "${README}:${number}: a checked block opens with \"```text tt-check: ARGS\", "
                            "got \"${shown}\"")
      endif()
    endif()
    continue()
  endif()
  if(line MATCHES "^ *```")
    set(in_block FALSE)
    if(block_lines EQUAL 0)
      message(FATAL_ERROR "${README}:${block_open}: the tt-check block opened here has no line to check")
    endif()
    continue()
  endif()
  # Lines inside an indented block (in a list item) lose the fence's indentation, as in Markdown.
  string(LENGTH "${block_indent}" cut)
  string(SUBSTRING "${line}" 0 ${cut} head)
  if(head STREQUAL block_indent)
    string(SUBSTRING "${line}" ${cut} -1 line)
  endif()
  string(REGEX REPLACE "[ \t]+$" "" line "${line}")
  if(line STREQUAL "")
    continue()
  endif()
  # A line's protected text holds no ';', so it is one list element.
  list(APPEND GROUP_${g}_LINES "${line}")
  list(APPEND GROUP_${g}_NUMBERS ${number})
  math(EXPR block_lines "${block_lines} + 1")
endforeach()
if(in_block)
  message(FATAL_ERROR "${README}:${block_open}: the tt-check block opened here is never closed")
endif()
list(LENGTH groups group_count)
if(group_count EQUAL 0)
  message(FATAL_ERROR "${README}: no \"```text tt-check: ARGS\" block to check")
endif()

# --- running the walkthrough once per distinct ARGS --------------------------------------------------

# The longest beginning of `expected` that also begins a line of `output` ("\n"-framed), found by
# bisection: if a beginning of length L begins some line, so does every shorter one.
function(tt_readme_closest out output expected)
  string(LENGTH "${expected}" high)
  set(low 0)
  while(low LESS high)
    math(EXPR mid "(${low} + ${high} + 1) / 2")
    string(SUBSTRING "${expected}" 0 ${mid} prefix)
    string(FIND "${output}" "\n${prefix}" at)
    if(at EQUAL -1)
      math(EXPR high "${mid} - 1")
    else()
      set(low ${mid})
    endif()
  endwhile()
  # A shared run of spaces, or a word or two, says nothing: ask for 6 characters past the indent.
  string(SUBSTRING "${expected}" 0 ${low} prefix)
  set(indent_length 0)
  if(prefix MATCHES "^( +)")
    string(LENGTH "${CMAKE_MATCH_1}" indent_length)
  endif()
  math(EXPR useful "${low} - ${indent_length}")
  set(lines "")
  if(useful GREATER_EQUAL 6)
    set(rest "${output}")
    set(found 0)
    while(found LESS 3)
      string(FIND "${rest}" "\n${prefix}" at)
      if(at EQUAL -1)
        break()
      endif()
      math(EXPR at "${at} + 1")
      string(SUBSTRING "${rest}" ${at} -1 rest)
      string(FIND "${rest}" "\n" stop)
      string(SUBSTRING "${rest}" 0 ${stop} hit)
      string(APPEND lines "  |${hit}\n")
      math(EXPR found "${found} + 1")
    endwhile()
  endif()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

set(failures "")
set(failure_count 0)
math(EXPR last_group "${group_count} - 1")
foreach(g RANGE ${last_group})
  list(GET groups ${g} args)
  if("${args}" STREQUAL "${NO_ARGS}")
    set(args "")
  endif()
  tt_readme_restore(args "${args}")
  separate_arguments(words UNIX_COMMAND "${args}")
  set(env "OMP_WAIT_POLICY=passive" "OMP_NUM_THREADS=2")  # the block's own settings come after and win
  set(argv "")
  set(settings "")
  foreach(word IN LISTS words)
    if(argv STREQUAL "" AND word MATCHES "^[A-Za-z_][A-Za-z0-9_]*=")
      list(APPEND env "${word}")
      list(APPEND settings "${word}")
    else()
      list(APPEND argv "${word}")
    endif()
  endforeach()
  list(JOIN argv " " shown_args)
  list(JOIN settings " " shown_settings)
  set(run "`${NAME}${shown_args}`")
  if(NOT shown_args STREQUAL "")
    set(run "`${NAME} ${shown_args}`")
  endif()
  if(NOT shown_settings STREQUAL "")
    string(APPEND run " (${shown_settings})")
  endif()

  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${env} "${WALKTHROUGH}" ${argv}
                  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    # The output, then stderr last: an exercise copy's stub says so there, and CTest skips on it.
    message(NOTICE "${output}\n${errors}")
    message(FATAL_ERROR "${README}:${GROUP_${g}_OPEN}: ${run} failed (exit ${rc}); its output is above")
  endif()
  # Trailing spaces do not count, and every line is framed by newlines for whole-line search.
  string(REPLACE "\r" "" output "${output}")
  string(REGEX REPLACE "[ \t]+\n" "\n" output "${output}")
  string(REGEX REPLACE "[ \t]+$" "" output "${output}")
  set(output "\n${output}\n")

  list(LENGTH GROUP_${g}_LINES count)
  math(EXPR last "${count} - 1")
  set(checked 0)
  foreach(i RANGE ${last})
    list(GET GROUP_${g}_LINES ${i} expected)
    list(GET GROUP_${g}_NUMBERS ${i} number)
    tt_readme_restore(expected "${expected}")
    string(FIND "${output}" "\n${expected}\n" at)
    if(at EQUAL -1)
      math(EXPR failure_count "${failure_count} + 1")
      string(APPEND failures "${README}:${number}: this line is not in the output of ${run}:\n  |${expected}\n")
      tt_readme_closest(close "${output}" "${expected}")
      if(close STREQUAL "")
        string(APPEND failures "no line of the output begins like it.\n")
      else()
        string(APPEND failures "the closest lines of the output:\n${close}")
      endif()
    else()
      math(EXPR checked "${checked} + 1")
    endif()
  endforeach()
  message(STATUS "${run}: ${checked} of ${count} lines found")
endforeach()

# message(FATAL_ERROR) rewraps its text; NOTICE prints it as it is (to stderr).
if(failure_count GREATER 0)
  message(NOTICE "${failure_count} line(s) of ${README} disagree with the walkthrough "
                 "(fix the README, or the walkthrough if it is the one that is wrong):\n${failures}")
  message(FATAL_ERROR "CheckReadme: ${failure_count} line(s) not found (listed above)")
endif()
