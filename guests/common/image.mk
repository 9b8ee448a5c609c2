# The image rule both guests share: link twice, at the real base and 2 MiB
# higher (where QEMU's -kernel puts it); the raw bytes must be identical, or
# something holds an absolute address (a pointer table, a literal pool).
# Outputs appear only if that holds. Include after ELF, BIN, MOVED, OBJS,
# LDS, CC, LDFLAGS and OBJCOPY are set.
$(ELF) $(BIN) &: $(OBJS) $(LDS)
	$(quiet) LD $(notdir $(ELF))
	$(Q)$(CC) $(LDFLAGS) -T $(LDS) -o $(ELF).tmp $(OBJS)
	$(Q)$(CC) $(LDFLAGS) -T $(LDS) -Wl,--defsym=link_base=0x40200000 -o $(MOVED).elf $(OBJS)
	$(quiet) BIN $(notdir $(BIN))
	$(Q)$(OBJCOPY) -O binary $(ELF).tmp $(BIN).tmp
	$(Q)$(OBJCOPY) -O binary $(MOVED).elf $(MOVED).bin
	$(Q)cmp -s $(BIN).tmp $(MOVED).bin || { \
		echo "error: $(notdir $(ELF)) changes with its link address:" \
		     "something holds an absolute address (pointer table, literal pool)" >&2; \
		rm -f $(ELF) $(BIN) $(ELF).tmp $(BIN).tmp; exit 1; }
	$(Q)mv $(ELF).tmp $(ELF)
	$(Q)mv $(BIN).tmp $(BIN)
