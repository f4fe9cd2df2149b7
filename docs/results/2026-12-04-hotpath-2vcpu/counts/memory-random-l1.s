L:
	cmpq	%rsi, %rdx
	jae	L
	movq	(%rdi,%rdx,8), %rdx
	decq	%rcx
	jne	L
