# Checks that every measured number in the module READMEs says where it was measured (cmake -P; no Python).
#
#   cmake -DROOT=/path/to/tinytorch -P cmake/CheckReadmeClaims.cmake
#
# A time or a rate depends on the machine: its CPU, its BLAS kernel set (OPENBLAS_CORETYPE), its
# thread count, its load. readme_NN checks the numbers a walkthrough prints exactly, so it cannot
# check a time. The rule (README.md, "Numbers in the READMEs"): a measured number is stated as
# one run on a named machine and configuration, with the command that reproduces it. This script
# enforces the part of the rule a program can see:
#
# - a fenced block that holds a time or a rate (12.5 ms, 5.6 us, 20.27 GB/s, 375 GFLOP/s, 1.80x)
#   must open with "```text measured: MACHINE AND CONFIGURATION ... tools/tt COMMAND", e.g.
#     ```text measured: 2-core AMD EPYC (Zen 5), OpenBLAS Haswell kernels, 2 threads, one run; reproduce with tools/tt walkthrough 15 --step 7
# - a Markdown table that holds one needs, within 3 lines before or after it, a line with
#   "Measured" and a tools/tt command.
#
# What it cannot see (a speed-up claimed in prose must state its condition) is left to review.

cmake_minimum_required(VERSION 3.24)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "CheckReadmeClaims: -DROOT=... is required (see the top of cmake/CheckReadmeClaims.cmake)")
endif()

# A time or a rate: a number, an optional space, a unit, then no letter or digit. Ratios need a
# decimal point ("1.80x"), so that "2x the bytes" in a cost model is not taken for a measurement.
set(unit "(ns|us|µs|ms|s|min|GB/s|GiB/s|MB/s|MiB/s|KB/s|GFLOP/s|TFLOP/s|tokens/s|tok/s|steps/s|samples/s)")
set(MEASURED_RE "[0-9] ?${unit}([^A-Za-z0-9/]|$)|[0-9]\\.[0-9]+ ?(x|×)([^A-Za-z0-9]|$)")

string(ASCII 1 SEMI)
string(ASCII 2 OPEN)
string(ASCII 3 CLOSE)
string(ASCII 4 BSLASH)

file(GLOB readmes "${ROOT}/modules/*/README.md")
list(SORT readmes)
if(readmes STREQUAL "")
  message(FATAL_ERROR "CheckReadmeClaims: no module README under ${ROOT}/modules")
endif()

set(failures "")
set(failure_count 0)
foreach(readme IN LISTS readmes)
  file(RELATIVE_PATH shown_path "${ROOT}" "${readme}")
  file(READ "${readme}" text)
  string(REPLACE "\r" "" text "${text}")
  # The same protection as CheckReadme.cmake: ';', '[', ']' and '\' would change how a list splits.
  string(REPLACE "\\" "${BSLASH}" text "${text}")
  string(REPLACE ";" "${SEMI}" text "${text}")
  string(REPLACE "[" "${OPEN}" text "${text}")
  string(REPLACE "]" "${CLOSE}" text "${text}")
  string(REPLACE "\n" ";|" lines "|${text}")
  list(LENGTH lines count)

  set(number 0)
  set(in_fence FALSE)
  set(fence_ok FALSE)
  set(fence_flagged FALSE)
  set(table_start 0)     # first line of the table being read, 0 outside a table
  set(table_hit 0)       # its first line with a measurement, 0 if none
  foreach(entry IN LISTS lines)
    math(EXPR number "${number} + 1")
    string(SUBSTRING "${entry}" 1 -1 line)
    if(in_fence)
      if(line MATCHES "^ *```")
        set(in_fence FALSE)
      elseif(NOT fence_ok AND NOT fence_flagged AND line MATCHES "${MEASURED_RE}")
        string(STRIP "${line}" what)
        string(APPEND failures "  ${shown_path}:${number}: a measured number (\"${what}\") in the block opened at "
                               "line ${fence_open}, which does not say where it was measured: open the block with "
                               "\"```text measured: MACHINE, BLAS kernels, threads, runs; reproduce with tools/tt ...\"\n")
        math(EXPR failure_count "${failure_count} + 1")
        set(fence_flagged TRUE)
      endif()
      continue()
    endif()
    if(line MATCHES "^ *```(.*)$")
      set(info "${CMAKE_MATCH_1}")
      set(in_fence TRUE)
      set(fence_open ${number})
      set(fence_flagged FALSE)
      # Code (cpp, sh, ...) and checked output hold no measurement; "measured:" must name a command.
      if(info MATCHES "^(text|)( |$)" AND NOT info MATCHES "^text tt-check:")
        set(fence_ok FALSE)
        if(info MATCHES "^text measured:.*tools/tt ")
          set(fence_ok TRUE)
        elseif(info MATCHES "measured")
          string(APPEND failures "  ${shown_path}:${number}: a measured block names the command that reproduces it: "
                                 "\"```text measured: ...; reproduce with tools/tt ...\"\n")
          math(EXPR failure_count "${failure_count} + 1")
          set(fence_ok TRUE)
        endif()
      else()
        set(fence_ok TRUE)
      endif()
    endif()
    # Tables: a run of lines that begin with '|'.
    if(line MATCHES "^ *\\|")
      if(table_start EQUAL 0)
        set(table_start ${number})
        set(table_hit 0)
      endif()
      if(table_hit EQUAL 0 AND line MATCHES "${MEASURED_RE}")
        set(table_hit ${number})
      endif()
    elseif(NOT table_start EQUAL 0)
      if(NOT table_hit EQUAL 0)
        # Lines table_start-3 .. number+2 (1-based), clamped to the file.
        math(EXPR from "${table_start} - 4")
        math(EXPR to "${number} + 2")
        if(from LESS 0)
          set(from 0)
        endif()
        if(to GREATER count)
          set(to ${count})
        endif()
        math(EXPR length "${to} - ${from}")
        list(SUBLIST lines ${from} ${length} around)
        string(JOIN " " around_text ${around})
        if(NOT around_text MATCHES "[Mm]easured" OR NOT around_text MATCHES "tools/tt ")
          string(APPEND failures "  ${shown_path}:${table_hit}: the table from line ${table_start} holds a measured "
                                 "number; say next to it (3 lines before or after) where it was \"Measured\" "
                                 "and the tools/tt command that reproduces it\n")
          math(EXPR failure_count "${failure_count} + 1")
        endif()
      endif()
      set(table_start 0)
    endif()
  endforeach()
endforeach()

string(REPLACE "${SEMI}" ";" failures "${failures}")
string(REPLACE "${OPEN}" "[" failures "${failures}")
string(REPLACE "${CLOSE}" "]" failures "${failures}")
string(REPLACE "${BSLASH}" "\\" failures "${failures}")
if(failure_count GREATER 0)
  message(FATAL_ERROR "${failure_count} measured number(s) without their machine and command:\n${failures}")
endif()
list(LENGTH readmes readme_count)
message(STATUS "readme claims: every measured block and table of ${readme_count} module READMEs says where it was measured")
