module gornir_standin

go 1.21
