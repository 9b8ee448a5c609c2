# One short line per step; V=1 shows the commands, make -s shows nothing.
# Every guest's Makefile includes this before its rules.
ifeq ($(V),1)
Q :=
quiet = @true
else ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
Q := @
quiet = @true
else
Q := @
quiet = @printf '  %-7s %s\n'
endif
